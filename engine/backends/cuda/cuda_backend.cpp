// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend (see cuda_backend.h). What differs from the CPU backend,
// which implements the same interface on host threads:
// - Kernel arguments are fixed when a kernel is launched or captured, so a
//   stream workspace grows before the launch that needs it, and a replaced
//   workspace is retired (kept until the backend goes), never freed: graphs
//   captured earlier still point at it.
// - Captured graphs are profiled per graph launch, not per node: timing
//   events recorded inside a capture become dependencies, not timestamps.
// - Host collectives meet in a rendezvous (host_collectives.h) so that one
//   host thread may issue them for every rank.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/cuda/cublas_handles.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/host_collectives.h"

namespace tr::cuda {

namespace {

size_t si(StreamKind s) {
  return static_cast<size_t>(s);
}

// Makes `device` current for the scope and restores the caller's device, so
// a host thread that drives several ranks never leaks one rank's device.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    TR_CUDA_CHECK(cudaGetDevice(&previous_), device);
    if (previous_ != device) TR_CUDA_CHECK(cudaSetDevice(device), device);
  }
  ~DeviceScope() { (void)cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

struct Rank;

// A host function and the rank whose errors it reports; `once`: a direct
// launch that frees itself, otherwise a graph node replayed every launch.
struct HostCall {
  Rank* rank = nullptr;
  std::function<void()> fn;
  bool once = false;
};

// A launch the profiler times: two timing events around it on its stream.
struct Timed {
  LaunchTag tag;
  cudaEvent_t start = nullptr, end = nullptr;
};

struct Rank {
  int device = 0;
  std::array<cudaStream_t, kNumStreams> streams{};
  cudaStream_t clock = nullptr;  // idle: the profiling origin completes at once there
  uint8_t* arena = nullptr;
  std::vector<cudaEvent_t> events;
  std::vector<cudaGraphExec_t> graphs;
  bool capturing = false;
  StreamKind primary = StreamKind::COMP_1;
  std::array<StreamWorkspace, kNumStreams> workspaces{};
  // One cuBLAS handle a stream, made at the first GEMM on it (cublas_handles.h).
  std::unique_ptr<CublasHandles> blas;
  std::vector<void*> retired;  // workspaces replaced by larger ones
  std::deque<HostCall> kept;   // host functions of captured graphs
  ncclComm_t comm = nullptr;
  bool grouping = false;
  HostBatch group;
  std::vector<Timed> timed;
  cudaEvent_t origin = nullptr;  // profiling clock origin
  double origin_us = 0;          // host time of `origin`, since the backend's origin
  std::mutex error_mutex;
  std::exception_ptr host_error;  // thrown by a host function, reported at synchronize
};

void CUDART_CB run_host_call(void* data) {
  auto* call = static_cast<HostCall*>(data);
  try {
    call->fn();
  } catch (...) {
    std::lock_guard<std::mutex> lock(call->rank->error_mutex);
    if (!call->rank->host_error) call->rank->host_error = std::current_exception();
  }
  if (call->once) delete call;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaBackendOptions& o)
      : devices_(o.devices),
        rendezvous_(static_cast<int>(o.devices.size()),
                    [this](const std::vector<HostBatch>& round) { issue(round); }) {
    origin_ = std::chrono::steady_clock::now();
    if (devices_.empty()) throw std::invalid_argument("CUDA backend: no devices given");
    if (std::set<int>(devices_.begin(), devices_.end()).size() != devices_.size())
      throw std::invalid_argument("CUDA backend: a device appears twice in the device list");
    int count = 0;
    TR_CUDA_CHECK(cudaGetDeviceCount(&count), -1);
    for (int d : devices_)
      if (d < 0 || d >= count)
        throw std::runtime_error("CUDA backend: no device " + std::to_string(d) +
                                 " (the driver reports " + std::to_string(count) + ")");
    try {
      for (int d : devices_) {
        ranks_.push_back(std::make_unique<Rank>());
        Rank& r = *ranks_.back();
        r.device = d;
        DeviceScope scope(d);
        // Non-blocking: the legacy default stream would serialise with every stream.
        for (cudaStream_t& s : r.streams)
          TR_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), d);
        TR_CUDA_CHECK(cudaStreamCreateWithFlags(&r.clock, cudaStreamNonBlocking), d);
        r.blas = std::make_unique<CublasHandles>(d);
        for (cudaStream_t s : r.streams) r.blas->adopt(s);
        TR_CUDA_CHECK(cudaEventCreate(&r.origin), d);
      }
      std::vector<ncclComm_t> comms(devices_.size());
      TR_NCCL_CHECK(
          ncclCommInitAll(comms.data(), static_cast<int>(devices_.size()), devices_.data()),
          devices_.front());
      for (size_t i = 0; i < comms.size(); ++i) ranks_[i]->comm = comms[i];
      if (o.profiling) set_profiling(true);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaBackend() override { release(); }

  std::string name() const override { return "cuda"; }
  int world_size() const override { return static_cast<int>(ranks_.size()); }

  void allocate_arenas(uint64_t bytes) override {
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (r.capturing) throw std::logic_error("CUDA backend: allocate_arenas during a capture");
      rendezvous_.settle(rank_of(r));
      DeviceScope scope(r.device);
      for (cudaStream_t s : r.streams) TR_CUDA_CHECK(cudaStreamSynchronize(s), r.device);
      if (r.arena) TR_CUDA_CHECK(cudaFree(r.arena), r.device);
      r.arena = nullptr;
      void* p = nullptr;
      const cudaError_t err = cudaMalloc(&p, std::max<uint64_t>(bytes, 1));
      if (err != cudaSuccess)
        check_cuda(err, ("cudaMalloc of an arena of " + std::to_string(bytes) + " bytes").c_str(),
                   r.device);
      r.arena = static_cast<uint8_t*>(p);
      // On our own stream: a plain cudaMemset would use the legacy default stream.
      TR_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, r.streams[si(StreamKind::TRANS)]), r.device);
      TR_CUDA_CHECK(cudaStreamSynchronize(r.streams[si(StreamKind::TRANS)]), r.device);
    }
    arena_bytes_ = bytes;
  }
  uint8_t* arena(int rank) override { return at(rank).arena; }
  uint64_t arena_bytes() const override { return arena_bytes_; }

  EventId create_event(int rank) override {
    Rank& r = at(rank);
    if (r.capturing)
      throw std::logic_error("CUDA backend: events must be created before capture begins");
    DeviceScope scope(r.device);
    cudaEvent_t e = nullptr;
    // Timing would cost every record a timestamp; the profiler has its own events.
    TR_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), r.device);
    r.events.push_back(e);
    return static_cast<EventId>(r.events.size() - 1);
  }

  void record(int rank, StreamKind stream, EventId id) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaEventRecord(event(r, id), r.streams[si(stream)]), r.device);
  }

  void wait(int rank, StreamKind stream, EventId id) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    // Never recorded: completes at once, as the CPU backend's wait does.
    TR_CUDA_CHECK(cudaStreamWaitEvent(r.streams[si(stream)], event(r, id), 0), r.device);
  }

  void synchronize(int rank, StreamKind stream) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaStreamSynchronize(r.streams[si(stream)]), r.device);
    after_synchronize(r);
  }

  void synchronize(int rank) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    for (cudaStream_t s : r.streams) TR_CUDA_CHECK(cudaStreamSynchronize(s), r.device);
    after_synchronize(r);
  }

  void enqueue(int rank, StreamKind stream, Launch launch) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    cudaStream_t s = r.streams[si(stream)];
    launch.tag.stream = stream;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    TR_CUDA_CHECK(cudaStreamIsCapturing(s, &status), r.device);
    const bool captured = status != cudaStreamCaptureStatusNone;
    if (r.capturing && !captured && launch.kind == LaunchKind::COLLECTIVE)
      throw std::logic_error("CUDA backend: collective outside the capture while capturing");
    Timed timed;
    const bool timing = profiling_ && !captured;
    if (timing) timed = start_timing(r, s, launch.tag);
    switch (launch.kind) {
      case LaunchKind::KERNEL:
        kernel(r, stream, launch);
        break;
      case LaunchKind::COPY_H2D:
        copy_h2d(r, s, launch);
        break;
      case LaunchKind::COPY_D2H:
        check_bytes(r, launch.offset, launch.bytes, "device-to-host copy");
        TR_CUDA_CHECK(cudaMemcpyAsync(launch.host, r.arena + launch.offset, launch.bytes,
                                      cudaMemcpyDeviceToHost, s),
                      r.device);
        break;
      case LaunchKind::HOST_FUNC:
        host_func(r, s, std::move(launch.host_func), captured);
        break;
      case LaunchKind::COLLECTIVE:
        collective(r, s, launch);
        break;
    }
    if (timing) finish_timing(r, s, std::move(timed));
  }

  // Relaxed capture mode: a captured launch may have to grow its stream's
  // workspace, a cudaMalloc that the other modes forbid while capturing; and
  // rank threads capture side by side, which global mode would turn into
  // errors on each other's unsafe calls. Nothing here synchronises a
  // capturing stream, which relaxed mode no longer catches.
  void begin_capture(int rank, StreamKind primary) override {
    Rank& r = ready(rank);
    if (r.capturing) throw std::logic_error("CUDA backend: capture already in progress");
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaStreamBeginCapture(r.streams[si(primary)], cudaStreamCaptureModeRelaxed),
                  r.device);
    r.capturing = true;
    r.primary = primary;
  }

  GraphHandle end_capture(int rank, StreamKind primary) override {
    Rank& r = at(rank);
    if (!r.capturing || primary != r.primary)
      throw std::logic_error("CUDA backend: end_capture on a stream that is not capturing");
    DeviceScope scope(r.device);
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(r.streams[si(primary)], &graph);
    r.capturing = false;
    if (err == cudaErrorStreamCaptureUnjoined) {
      (void)cudaGetLastError();
      if (graph) (void)cudaGraphDestroy(graph);
      throw std::logic_error(
          "CUDA backend: a stream joined the capture but its work was not joined back into " +
          std::string(stream_kind_name(primary)) + " before end_capture");
    }
    check_cuda(err, "cudaStreamEndCapture", r.device);
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    check_cuda(inst, "cudaGraphInstantiate", r.device);
    r.graphs.push_back(exec);
    return static_cast<GraphHandle>(r.graphs.size() - 1);
  }

  void launch_graph(int rank, StreamKind stream, GraphHandle handle) override {
    Rank& r = ready(rank);
    if (handle < 0 || static_cast<size_t>(handle) >= r.graphs.size())
      throw std::out_of_range("CUDA backend: no graph " + std::to_string(handle));
    if (r.capturing) throw std::logic_error("CUDA backend: graph launch inside a capture");
    DeviceScope scope(r.device);
    cudaStream_t s = r.streams[si(stream)];
    LaunchTag tag;
    tag.stream = stream;
    tag.label = "graph " + std::to_string(handle);
    const bool timing = profiling_;
    Timed timed;
    if (timing) timed = start_timing(r, s, tag);
    TR_CUDA_CHECK(cudaGraphLaunch(r.graphs[static_cast<size_t>(handle)], s), r.device);
    if (timing) finish_timing(r, s, std::move(timed));
  }

  void all_reduce(int rank, StreamKind stream, ByteRange range, ReduceOp op) override {
    Rank& r = at(rank);
    check_bytes(r, range.offset, range.bytes, "all-reduce");
    if (range.bytes % 4 != 0)
      throw std::invalid_argument("CUDA backend: an all-reduce of " + std::to_string(range.bytes) +
                                  " bytes is not a whole number of floats");
    host_collective(r, stream,
                    {op == ReduceOp::MEAN ? HostCollectiveKind::ALL_REDUCE_MEAN
                                          : HostCollectiveKind::ALL_REDUCE_SUM,
                     r.arena + range.offset, range.bytes, 0});
  }

  void broadcast(int rank, StreamKind stream, ByteRange range, int root) override {
    Rank& r = at(rank);
    check_bytes(r, range.offset, range.bytes, "broadcast");
    if (root < 0 || root >= world_size())
      throw std::out_of_range("CUDA backend: broadcast from rank " + std::to_string(root) +
                              " in a world of " + std::to_string(world_size()));
    host_collective(r, stream,
                    {HostCollectiveKind::BROADCAST, r.arena + range.offset, range.bytes, root});
  }

  void group_start(int rank) override {
    Rank& r = at(rank);
    if (r.grouping) throw std::logic_error("CUDA backend: group_start inside a group");
    r.grouping = true;
    r.group = HostBatch{};
  }

  void group_end(int rank) override {
    Rank& r = at(rank);
    if (!r.grouping) throw std::logic_error("CUDA backend: group_end without group_start");
    r.grouping = false;
    HostBatch batch = std::exchange(r.group, {});
    if (!batch.calls.empty()) rendezvous_.submit(rank, std::move(batch));
  }

  void abort_collectives(const std::string& reason) override {
    {
      std::lock_guard<std::mutex> lock(abort_mutex_);
      if (!abort_reason_.empty()) return;
      abort_reason_ = reason.empty() ? "collectives aborted" : reason;
    }
    aborted_ = true;
    rendezvous_.abort(abort_reason_);
    // ncclCommAbort stops the NCCL kernels in flight, so streams waiting on
    // a missing rank drain and the next synchronize reports the reason.
    for (auto& r : ranks_)
      if (r->comm) {
        (void)ncclCommAbort(r->comm);
        r->comm = nullptr;
      }
  }

  void set_profiling(bool enabled) override {
    if (enabled && !profiling_) {
      // The origin event completes at once on its idle stream, so its
      // timestamp and the host clock read after it agree to microseconds.
      for (auto& r : ranks_) {
        DeviceScope scope(r->device);
        TR_CUDA_CHECK(cudaEventRecord(r->origin, r->clock), r->device);
        TR_CUDA_CHECK(cudaEventSynchronize(r->origin), r->device);
        r->origin_us = since_origin_us();
      }
    }
    profiling_ = enabled;
  }

  // Waits for every timed launch to finish.
  std::vector<ProfileSpan> take_profile() override {
    std::vector<ProfileSpan> spans;
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      DeviceScope scope(r.device);
      std::vector<Timed> timed;
      {
        std::lock_guard<std::mutex> lock(profile_mutex_);
        timed = std::exchange(r.timed, {});
      }
      for (Timed& t : timed) {
        float start_ms = 0, end_ms = 0;
        TR_CUDA_CHECK(cudaEventSynchronize(t.end), r.device);
        TR_CUDA_CHECK(cudaEventElapsedTime(&start_ms, r.origin, t.start), r.device);
        TR_CUDA_CHECK(cudaEventElapsedTime(&end_ms, r.origin, t.end), r.device);
        ProfileSpan span;
        span.rank = rank_of(r);
        span.tag = std::move(t.tag);
        span.start_us = r.origin_us + 1000.0 * start_ms;
        span.end_us = r.origin_us + 1000.0 * end_ms;
        spans.push_back(std::move(span));
        (void)cudaEventDestroy(t.start);
        (void)cudaEventDestroy(t.end);
      }
    }
    return spans;
  }

 private:
  Rank& at(int rank) {
    if (rank < 0 || rank >= world_size())
      throw std::out_of_range("CUDA backend: no rank " + std::to_string(rank));
    return *ranks_[static_cast<size_t>(rank)];
  }
  // A rank whose host collectives have reached NCCL, so that work enqueued
  // now runs after them on their stream.
  Rank& ready(int rank) {
    Rank& r = at(rank);
    rendezvous_.settle(rank);
    return r;
  }
  int rank_of(const Rank& r) const {
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (ranks_[i].get() == &r) return static_cast<int>(i);
    return -1;
  }
  static cudaEvent_t event(Rank& r, EventId id) {
    if (id < 0 || static_cast<size_t>(id) >= r.events.size())
      throw std::out_of_range("CUDA backend: no event " + std::to_string(id));
    return r.events[static_cast<size_t>(id)];
  }
  double since_origin_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_)
        .count();
  }

  void check_bytes(const Rank& r, uint64_t offset, uint64_t bytes, const char* what) const {
    if (!r.arena || offset > arena_bytes_ || bytes > arena_bytes_ - offset)
      throw std::out_of_range(std::string("CUDA backend: ") + what + " of bytes [" +
                              std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                              ") outside the arena of " + std::to_string(arena_bytes_) + " bytes");
  }

  void after_synchronize(Rank& r) {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lock(r.error_mutex);
      e = std::exchange(r.host_error, nullptr);
    }
    if (e) std::rethrow_exception(e);
    if (aborted_) {
      std::lock_guard<std::mutex> lock(abort_mutex_);
      throw std::runtime_error(abort_reason_);
    }
  }

  Timed start_timing(Rank& r, cudaStream_t s, const LaunchTag& tag) {
    Timed t;
    t.tag = tag;
    TR_CUDA_CHECK(cudaEventCreate(&t.start), r.device);
    TR_CUDA_CHECK(cudaEventCreate(&t.end), r.device);
    TR_CUDA_CHECK(cudaEventRecord(t.start, s), r.device);
    return t;
  }
  void finish_timing(Rank& r, cudaStream_t s, Timed t) {
    TR_CUDA_CHECK(cudaEventRecord(t.end, s), r.device);
    std::lock_guard<std::mutex> lock(profile_mutex_);
    r.timed.push_back(std::move(t));
  }

  void kernel(Rank& r, StreamKind stream, const Launch& l) {
    if (!l.args || !l.args->node)
      throw std::invalid_argument("CUDA backend: a kernel launch without its node");
    const CudaKernel k = cuda_kernel(*l.args->node);
    // An internal guard, not a user error: the CUDA backend is not offered to
    // users until every op of a plan has a kernel.
    if (!k)
      throw std::logic_error("CUDA backend: no CUDA kernel for " +
                             std::string(cuda_op_name(*l.args->node)) + " yet");
    const uint64_t need = cuda_workspace_bytes(*l.args);
    if (!need) {
      k(*l.args, r.streams[si(stream)]);
      return;
    }
    KernelArgs bound = *l.args;
    bound.workspace = &reserve_workspace(r, stream, need);
    k(bound, r.streams[si(stream)]);
  }

  // Grows before the launch (its arguments are fixed when it is launched or
  // captured); the old buffer is retired, as queued launches and captured
  // graphs may still use it.
  const StreamWorkspace& reserve_workspace(Rank& r, StreamKind stream, uint64_t bytes) {
    StreamWorkspace& w = r.workspaces[si(stream)];
    if (bytes <= w.bytes) return w;
    // Whole MiB: the next larger need often differs by a few bytes.
    const uint64_t rounded = (bytes + (1u << 20) - 1) & ~uint64_t{(1u << 20) - 1};
    void* p = nullptr;
    TR_CUDA_CHECK(cudaMalloc(&p, rounded), r.device);
    if (w.data) r.retired.push_back(w.data);
    w.data = p;
    w.bytes = rounded;
    return w;
  }

  void copy_h2d(Rank& r, cudaStream_t s, const Launch& l) {
    if (l.rows == 0) {
      check_bytes(r, l.offset, l.bytes, "host-to-device copy");
      TR_CUDA_CHECK(cudaMemcpyAsync(r.arena + l.offset, l.host, l.bytes, cudaMemcpyHostToDevice, s),
                    r.device);
      return;
    }
    const uint64_t row = l.bytes / l.rows;
    if (row * l.rows != l.bytes || l.pitch < row)
      throw std::invalid_argument("CUDA backend: a pitched copy of " + std::to_string(l.bytes) +
                                  " bytes in " + std::to_string(l.rows) + " rows " +
                                  std::to_string(l.pitch) + " bytes apart");
    check_bytes(r, l.offset, (l.rows - 1) * l.pitch + row, "pitched host-to-device copy");
    // Padding lanes are never written: zero since the arena was made.
    TR_CUDA_CHECK(cudaMemcpy2DAsync(r.arena + l.offset, l.pitch, l.host, row, row, l.rows,
                                    cudaMemcpyHostToDevice, s),
                  r.device);
  }

  void host_func(Rank& r, cudaStream_t s, std::function<void()> fn, bool captured) {
    if (captured) {
      // A graph node runs at every replay: the function lives as long as the backend.
      HostCall& call = r.kept.emplace_back(HostCall{&r, std::move(fn), false});
      TR_CUDA_CHECK(cudaLaunchHostFunc(s, run_host_call, &call), r.device);
      return;
    }
    auto* call = new HostCall{&r, std::move(fn), true};
    const cudaError_t err = cudaLaunchHostFunc(s, run_host_call, call);
    if (err != cudaSuccess) delete call;
    check_cuda(err, "cudaLaunchHostFunc", r.device);
  }

  ncclComm_t comm(const Rank& r) const {
    if (aborted_ || !r.comm) {
      std::lock_guard<std::mutex> lock(abort_mutex_);
      throw std::runtime_error(abort_reason_.empty() ? "CUDA backend: no NCCL communicator"
                                                     : abort_reason_);
    }
    return r.comm;
  }

  // The spans of one node form one NCCL group.
  void collective(Rank& r, cudaStream_t s, const Launch& l) {
    if (!l.args || !l.args->node)
      throw std::invalid_argument("CUDA backend: a collective launch without its node");
    const ncclRedOp_t op = l.args->node->range_op == RangeOp::ALLREDUCE_MEAN ? ncclAvg : ncclSum;
    ncclComm_t c = comm(r);
    TR_NCCL_CHECK(ncclGroupStart(), r.device);
    for (const SpanArg& span : l.args->in_spans)
      if (span.bytes)
        TR_NCCL_CHECK(ncclAllReduce(span.data, span.data, span.floats(), ncclFloat, op, c, s),
                      r.device);
    TR_NCCL_CHECK(ncclGroupEnd(), r.device);
  }

  void host_collective(Rank& r, StreamKind stream, HostCollective call) {
    if (r.capturing) throw std::logic_error("CUDA backend: host-issued collective while capturing");
    if (!r.grouping) {
      rendezvous_.submit(rank_of(r), HostBatch{stream, {call}});
      return;
    }
    if (!r.group.calls.empty() && r.group.stream != stream)
      throw std::logic_error("CUDA backend: the collectives of one group must share a stream");
    r.group.stream = stream;
    r.group.calls.push_back(call);
  }

  // One round of host collectives, a batch per rank, as one NCCL group: a
  // single host thread may be issuing for every device.
  void issue(const std::vector<HostBatch>& round) {
    TR_NCCL_CHECK(ncclGroupStart(), -1);
    try {
      for (size_t i = 0; i < round.size(); ++i) {
        const Rank& r = *ranks_[i];
        const ncclComm_t c = comm(r);
        cudaStream_t s = r.streams[si(round[i].stream)];
        for (const HostCollective& call : round[i].calls) {
          if (call.bytes == 0) continue;
          if (call.kind == HostCollectiveKind::BROADCAST)
            TR_NCCL_CHECK(
                ncclBroadcast(call.data, call.data, call.bytes, ncclUint8, call.root, c, s),
                r.device);
          else
            TR_NCCL_CHECK(
                ncclAllReduce(call.data, call.data, call.bytes / 4, ncclFloat,
                              call.kind == HostCollectiveKind::ALL_REDUCE_MEAN ? ncclAvg : ncclSum,
                              c, s),
                r.device);
        }
      }
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    TR_NCCL_CHECK(ncclGroupEnd(), -1);
  }

  // Frees what exists; errors are ignored (a destructor must not throw).
  void release() noexcept {
    int previous = 0;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess;
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (cudaSetDevice(r.device) != cudaSuccess) continue;
      for (cudaStream_t s : r.streams)
        if (s) (void)cudaStreamSynchronize(s);
      if (r.comm) (void)ncclCommDestroy(r.comm);
      r.comm = nullptr;
      r.blas.reset();  // the streams have drained; the handles go before them
      for (cudaGraphExec_t g : r.graphs) (void)cudaGraphExecDestroy(g);
      for (cudaEvent_t e : r.events) (void)cudaEventDestroy(e);
      for (Timed& t : r.timed) {
        (void)cudaEventDestroy(t.start);
        (void)cudaEventDestroy(t.end);
      }
      if (r.origin) (void)cudaEventDestroy(r.origin);
      for (StreamWorkspace& w : r.workspaces)
        if (w.data) (void)cudaFree(w.data);
      for (void* p : r.retired) (void)cudaFree(p);
      if (r.arena) (void)cudaFree(r.arena);
      for (cudaStream_t s : r.streams)
        if (s) (void)cudaStreamDestroy(s);
      if (r.clock) (void)cudaStreamDestroy(r.clock);
    }
    ranks_.clear();
    if (restore) (void)cudaSetDevice(previous);
  }

  std::vector<int> devices_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  HostRendezvous rendezvous_;
  uint64_t arena_bytes_ = 0;
  std::chrono::steady_clock::time_point origin_;
  std::atomic<bool> profiling_{false};
  std::mutex profile_mutex_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace tr::cuda

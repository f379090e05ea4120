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
// - Two measuring modes (CudaBackendOptions): one CUDA stream for all five
//   StreamKinds, and "capture" that records launches instead of capturing
//   them and replays them one by one (what a framework without graphs does).
// - Across machines each process holds its node's ranks of a global world:
//   node 0 makes the NCCL unique id, the TCP rendezvous carries it to every
//   node, and each creates its communicators with ncclCommInitRank.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_rank_sum.h"
#include "backends/cuda/host_collectives.h"
#include "backends/cuda/nccl_library.h"
#include "backends/cuda/stream_handles.h"
#include "core/data_shard.h"
#include "net/tcp_rendezvous.h"

namespace tr::cuda {

namespace {

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

// One step of a graph recorded instead of captured (CudaBackendOptions::capture
// off), replayed as it was issued.
struct RecordedOp {
  enum class Kind { LAUNCH, RECORD, WAIT } kind = Kind::LAUNCH;
  StreamKind stream = StreamKind::COMP_1;
  Launch launch;      // LAUNCH (a host function's lives in `host_call`)
  EventId event = 0;  // RECORD, WAIT
  HostCall* host_call = nullptr;
};

// A GraphHandle's graph: an instantiated CUDA graph, or a recorded program.
struct GraphSlot {
  cudaGraphExec_t exec = nullptr;
  std::vector<RecordedOp> program;
  StreamKind primary = StreamKind::COMP_1;  // where the program began and joined back
};

// SyncBatchNorm's sums across ranks: an NCCL all-reduce on a communicator of
// its own, on the compute streams. They run only inside DEEP_FWD_BWD, which
// every step finishes before UPDATE starts a gradient all-reduce on the other
// communicator (training_session.cpp, deep_done; engine.compiler checks
// where they lie), so the two communicators never run at once.
class NcclRankSum final : public DeviceRankSum {
 public:
  NcclRankSum(ncclComm_t comm, int device) : comm_(comm), device_(device) {}
  void enqueue_sum(float* data, uint64_t count, cudaStream_t stream) const override {
    TR_NCCL_CHECK(nccl().all_reduce(data, data, count, ncclFloat, ncclSum, comm_, stream), device_);
  }

 private:
  ncclComm_t comm_;
  int device_;
};

struct Rank {
  int device = 0;
  // All five the same stream when the backend runs on one stream.
  std::array<cudaStream_t, kNumStreams> streams{};
  cudaStream_t clock = nullptr;  // idle: the profiling origin completes at once there
  uint8_t* arena = nullptr;
  std::vector<cudaEvent_t> events;
  std::vector<GraphSlot> graphs;
  bool capturing = false;
  bool recording = false;  // capturing by recording (capture off)
  std::vector<RecordedOp> recorded;
  cudaEvent_t bridge_event = nullptr;  // replay's join to the launch stream
  StreamKind primary = StreamKind::COMP_1;
  std::array<StreamWorkspace, kNumStreams> workspaces{};
  // One cuBLAS and one cuDNN handle a stream, made with the stream (stream_handles.h).
  std::unique_ptr<StreamHandles> handles;
  std::vector<void*> retired;  // workspaces replaced by larger ones
  std::deque<HostCall> kept;   // host functions of captured graphs
  ncclComm_t comm = nullptr;
  ncclComm_t bn_comm = nullptr;  // SyncBatchNorm's (CudaBackendOptions::sync_batch_norm)
  // With a tensor dimension (CudaBackendOptions::tensor): the rank's
  // data-parallel and tensor-parallel groups.
  ncclComm_t data_comm = nullptr, tensor_comm = nullptr;
  std::unique_ptr<NcclRankSum> rank_sum;
  int32_t* vote = nullptr;  // across nodes: any_process's one int
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
        tensor_(std::max(1, o.tensor)),
        capture_(o.capture),
        rendezvous_(static_cast<int>(o.devices.size()),
                    [this](const std::vector<HostBatch>& round) { issue(round); }) {
    origin_ = std::chrono::steady_clock::now();
    if (devices_.empty()) throw std::invalid_argument("CUDA backend: no devices given");
    if (std::set<int>(devices_.begin(), devices_.end()).size() != devices_.size())
      throw std::invalid_argument("CUDA backend: a device appears twice in the device list");
    if (o.streams != 1 && o.streams != kNumStreams)
      throw std::invalid_argument("CUDA backend: " + std::to_string(o.streams) +
                                  " streams asked for; 5 (one per StreamKind) or 1");
    conv::set_conv_algorithms(o.deterministic_conv ? conv::ConvAlgorithms::DETERMINISTIC
                                                   : conv::ConvAlgorithms::FASTEST);
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
        for (size_t i = 0; i < r.streams.size(); ++i) {
          if (o.streams == 1 && i > 0) {
            r.streams[i] = r.streams[0];
            continue;
          }
          TR_CUDA_CHECK(cudaStreamCreateWithFlags(&r.streams[i], cudaStreamNonBlocking), d);
        }
        TR_CUDA_CHECK(cudaStreamCreateWithFlags(&r.clock, cudaStreamNonBlocking), d);
        r.handles = std::make_unique<StreamHandles>(d);
        for (cudaStream_t s : distinct_streams(r)) r.handles->adopt(s);
        TR_CUDA_CHECK(cudaEventCreate(&r.origin), d);
      }
      std::vector<ncclComm_t> comms(devices_.size());
      // Every connection at initialisation, not at a communicator's first
      // use of an algorithm, which may come inside a captured graph (NCCL
      // 2.22+ connects lazily by default). A user's own setting stands.
      if (o.nodes.across_nodes() || devices_.size() > 1) setenv("NCCL_RUNTIME_CONNECT", "0", 0);
      // A world of one has nothing to communicate: no NCCL at all, so one GPU
      // trains where NCCL is missing or broken.
      if (o.nodes.across_nodes())
        init_across_nodes(o, comms);
      else if (devices_.size() > 1)
        TR_NCCL_CHECK(
            nccl().comm_init_all(comms.data(), static_cast<int>(devices_.size()), devices_.data()),
            devices_.front());
      for (size_t i = 0; i < comms.size(); ++i) ranks_[i]->comm = comms[i];
      if (tensor_ > 1) split_mesh_comms();
      if (o.sync_batch_norm && global_world() > 1) split_bn_comms();
      if (global_world() > 1) warm_communicators();
      if (o.profiling) set_profiling(true);
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaBackend() override { release(); }

  std::string name() const override { return "cuda"; }
  // Captured graphs only; the uncaptured mode's first step is its warm-up.
  bool warm_up_before_capture() const override { return capture_; }
  int world_size() const override { return static_cast<int>(ranks_.size()); }
  int global_world() const override { return global_world_ ? global_world_ : world_size(); }
  int global_rank(int local_rank) const override { return first_rank_ + local_rank; }

  // A max all-reduce of one int over every rank of every node. The trainer
  // calls it between steps with every local rank thread waiting, so no host
  // collective is queued and the UPDATE streams are idle.
  bool any_process(bool flag) override {
    if (global_world() == world_size()) return flag;
    const int32_t mine = flag ? 1 : 0;
    int32_t any = 0;
    for (int i = 0; i < world_size(); ++i) rendezvous_.settle(i);
    for (auto& r : ranks_) {
      DeviceScope scope(r->device);
      TR_CUDA_CHECK(cudaMemcpyAsync(r->vote, &mine, sizeof mine, cudaMemcpyHostToDevice,
                                    r->streams[stream_index(StreamKind::UPDATE)]),
                    r->device);
    }
    TR_NCCL_CHECK(nccl().group_start(), -1);
    try {
      for (auto& r : ranks_)
        TR_NCCL_CHECK(nccl().all_reduce(r->vote, r->vote, 1, ncclInt32, ncclMax, comm(*r),
                                        r->streams[stream_index(StreamKind::UPDATE)]),
                      r->device);
    } catch (...) {
      (void)nccl().group_end();
      throw;
    }
    TR_NCCL_CHECK(nccl().group_end(), -1);
    Rank& first = *ranks_.front();
    {
      DeviceScope scope(first.device);
      TR_CUDA_CHECK(cudaMemcpyAsync(&any, first.vote, sizeof any, cudaMemcpyDeviceToHost,
                                    first.streams[stream_index(StreamKind::UPDATE)]),
                    first.device);
    }
    for (auto& r : ranks_) {
      DeviceScope scope(r->device);
      TR_CUDA_CHECK(cudaStreamSynchronize(r->streams[stream_index(StreamKind::UPDATE)]), r->device);
      after_synchronize(*r);
    }
    return any != 0;
  }

  // Portable: every device's copies see the pages as page-locked. The
  // staging buffers are whole pages of their own (Tensor::whole_pages):
  // cudaHostRegister pins whole pages, so two buffers sharing one would
  // make the second registration fail and leave its tail pageable.
  void pin_host(const void* data, uint64_t bytes) override {
    if (!data || bytes == 0) return;
    const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    if (reinterpret_cast<uintptr_t>(data) % page != 0 || bytes % page != 0)
      throw std::logic_error("CUDA backend: staging memory to pin must be whole pages (" +
                             std::to_string(bytes) + " bytes)");
    std::lock_guard<std::mutex> lock(pin_mutex_);
    if (pinned_.count(data)) return;
    // Under one of our devices: a thread with none current would make a
    // context on device 0, which this run may not use.
    DeviceScope scope(devices_.front());
    const cudaError_t err =
        cudaHostRegister(const_cast<void*>(data), bytes, cudaHostRegisterPortable);
    if (err != cudaErrorHostMemoryAlreadyRegistered)
      check_cuda(err, ("cudaHostRegister of " + std::to_string(bytes) + " staging bytes").c_str(),
                 devices_.front());
    else
      (void)cudaGetLastError();
    // Every page, whoever registered it: a captured copy from a pageable
    // page would go through a driver buffer, or fail.
    const auto* bytes_at = static_cast<const uint8_t*>(data);
    for (uint64_t at = 0; at < bytes; at += page) {
      cudaPointerAttributes attributes{};
      const cudaError_t e = cudaPointerGetAttributes(&attributes, bytes_at + at);
      if (e != cudaSuccess || attributes.type != cudaMemoryTypeHost) {
        (void)cudaGetLastError();
        if (err == cudaSuccess) (void)cudaHostUnregister(const_cast<void*>(data));
        throw std::runtime_error("CUDA backend: " + std::to_string(bytes) +
                                 " staging bytes are not all page-locked: byte " +
                                 std::to_string(at) + " is pageable after cudaHostRegister");
      }
    }
    if (err == cudaSuccess) pinned_.insert(data);
  }

  void unpin_host(const void* data) noexcept override {
    std::lock_guard<std::mutex> lock(pin_mutex_);
    if (!pinned_.erase(data)) return;
    // noexcept: PinnedHost calls this from its destructor.
    int previous = 0;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess;
    (void)cudaSetDevice(devices_.front());
    (void)cudaHostUnregister(const_cast<void*>(data));
    if (restore) (void)cudaSetDevice(previous);
  }

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
      TR_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, r.streams[stream_index(StreamKind::TRANS)]),
                    r.device);
      TR_CUDA_CHECK(cudaStreamSynchronize(r.streams[stream_index(StreamKind::TRANS)]), r.device);
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
    if (r.recording) {
      (void)event(r, id);
      r.recorded.push_back({RecordedOp::Kind::RECORD, stream, {}, id, nullptr});
      return;
    }
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaEventRecord(event(r, id), r.streams[stream_index(stream)]), r.device);
  }

  void wait(int rank, StreamKind stream, EventId id) override {
    Rank& r = ready(rank);
    if (r.recording) {
      (void)event(r, id);
      r.recorded.push_back({RecordedOp::Kind::WAIT, stream, {}, id, nullptr});
      return;
    }
    DeviceScope scope(r.device);
    // Never recorded: completes at once, as the CPU backend's wait does.
    TR_CUDA_CHECK(cudaStreamWaitEvent(r.streams[stream_index(stream)], event(r, id), 0), r.device);
  }

  void synchronize(int rank, StreamKind stream) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaStreamSynchronize(r.streams[stream_index(stream)]), r.device);
    after_synchronize(r);
  }

  void synchronize(int rank) override {
    Rank& r = ready(rank);
    DeviceScope scope(r.device);
    for (cudaStream_t s : r.streams) TR_CUDA_CHECK(cudaStreamSynchronize(s), r.device);
    after_synchronize(r);
  }

  void synchronize_event(int rank, EventId id) override {
    Rank& r = ready(rank);
    if (r.recording || r.capturing)
      throw std::logic_error("CUDA backend: the host cannot wait for an event during a capture");
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(cudaEventSynchronize(event(r, id)), r.device);
    after_synchronize(r);
  }

  void enqueue(int rank, StreamKind stream, Launch launch) override {
    Rank& r = ready(rank);
    if (r.recording) {
      record_launch(r, stream, std::move(launch));
      return;
    }
    DeviceScope scope(r.device);
    launch.tag.stream = stream;
    run_launch(r, stream, launch);
  }

  // One launch on its stream now: inside a capture it becomes a graph node.
  void run_launch(Rank& r, StreamKind stream, const Launch& launch) {
    cudaStream_t s = r.streams[stream_index(stream)];
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
        host_func(r, s, launch.host_func, captured);
        break;
      case LaunchKind::COLLECTIVE:
        collective(r, s, launch);
        break;
    }
    if (timing) finish_timing(r, s, std::move(timed));
  }

  // Before its rank captures (runtime/graph_capture.cpp): chooses every
  // library algorithm (cuDNN's measured search runs kernels on this stream,
  // and allocates and frees its scratch) and grows the stream workspace, so
  // nothing inside the capture allocates. Captures use relaxed mode because
  // rank threads capture side by side while another rank's thread may be
  // here, which global mode would turn into errors on each other's unsafe
  // calls. Nothing synchronises a capturing stream, which relaxed mode no
  // longer catches.
  void prepare_launch(int rank, StreamKind stream, const Launch& l) override {
    if (l.kind != LaunchKind::KERNEL || !l.args || !l.args->node) return;
    Rank& r = at(rank);
    DeviceScope scope(r.device);
    // Chooses (and caches) the launch's algorithms; the capture finds them.
    const uint64_t need = cuda_workspace_bytes(*l.args, r.streams[stream_index(stream)]);
    if (need) reserve_workspace(r, stream, need);
  }

  void begin_capture(int rank, StreamKind primary) override {
    Rank& r = ready(rank);
    if (r.capturing) throw std::logic_error("CUDA backend: capture already in progress");
    if (!capture_) {
      r.capturing = r.recording = true;
      r.primary = primary;
      r.recorded.clear();
      return;
    }
    DeviceScope scope(r.device);
    TR_CUDA_CHECK(
        cudaStreamBeginCapture(r.streams[stream_index(primary)], cudaStreamCaptureModeRelaxed),
        r.device);
    r.capturing = true;
    r.primary = primary;
  }

  GraphHandle end_capture(int rank, StreamKind primary) override {
    Rank& r = at(rank);
    if (!r.capturing || primary != r.primary)
      throw std::logic_error("CUDA backend: end_capture on a stream that is not capturing");
    if (r.recording) {
      r.capturing = r.recording = false;
      r.graphs.push_back(GraphSlot{nullptr, std::exchange(r.recorded, {}), primary});
      return static_cast<GraphHandle>(r.graphs.size() - 1);
    }
    DeviceScope scope(r.device);
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(r.streams[stream_index(primary)], &graph);
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
    r.graphs.push_back(GraphSlot{exec, {}, primary});
    return static_cast<GraphHandle>(r.graphs.size() - 1);
  }

  void abort_capture(int rank) noexcept override {
    if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size() ||
        !ranks_[static_cast<size_t>(rank)])
      return;
    Rank& r = *ranks_[static_cast<size_t>(rank)];
    if (!r.capturing) return;
    r.capturing = false;
    if (r.recording) {
      r.recording = false;
      r.recorded.clear();
      return;
    }
    DeviceScope scope(r.device);
    // Join every stream that forked into the capture back into the primary,
    // so that ending it ends the whole capture sequence.
    cudaStream_t primary = r.streams[stream_index(r.primary)];
    for (cudaStream_t s : distinct_streams(r)) {
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (s == primary || cudaStreamIsCapturing(s, &status) != cudaSuccess ||
          status != cudaStreamCaptureStatusActive)
        continue;
      cudaEvent_t join = nullptr;
      if (cudaEventCreateWithFlags(&join, cudaEventDisableTiming) != cudaSuccess) continue;
      if (cudaEventRecord(join, s) == cudaSuccess) (void)cudaStreamWaitEvent(primary, join, 0);
      (void)cudaEventDestroy(join);
    }
    cudaGraph_t graph = nullptr;
    (void)cudaStreamEndCapture(primary, &graph);
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // the capture's error is not the caller's
  }

  void launch_graph(int rank, StreamKind stream, GraphHandle handle) override {
    Rank& r = ready(rank);
    // After an abort the communicators are gone: no graph (which may hold
    // NCCL kernels) runs again.
    if (aborted_) {
      std::lock_guard<std::mutex> lock(abort_mutex_);
      throw std::runtime_error(abort_reason_);
    }
    if (handle < 0 || static_cast<size_t>(handle) >= r.graphs.size())
      throw std::out_of_range("CUDA backend: no graph " + std::to_string(handle));
    if (r.capturing) throw std::logic_error("CUDA backend: graph launch inside a capture");
    const GraphSlot& slot = r.graphs[static_cast<size_t>(handle)];
    if (!slot.exec) {
      replay(r, stream, slot);
      return;
    }
    DeviceScope scope(r.device);
    cudaStream_t s = r.streams[stream_index(stream)];
    LaunchTag tag;
    tag.stream = stream;
    tag.label = "graph " + std::to_string(handle);
    const bool timing = profiling_;
    Timed timed;
    if (timing) timed = start_timing(r, s, tag);
    TR_CUDA_CHECK(cudaGraphLaunch(slot.exec, s), r.device);
    if (timing) finish_timing(r, s, std::move(timed));
  }

  void all_reduce(int rank, StreamKind stream, ByteRange range, ReduceOp op) override {
    Rank& r = at(rank);
    check_bytes(r, range.offset, range.bytes, "all-reduce");
    if (range.bytes % 4 != 0)
      throw std::invalid_argument("CUDA backend: an all-reduce of " + std::to_string(range.bytes) +
                                  " bytes is not a whole number of floats");
    if (global_world() == 1) return;  // the sum and the mean of one rank's bytes are those bytes
    host_collective(r, stream,
                    {op == ReduceOp::MEAN ? HostCollectiveKind::ALL_REDUCE_MEAN
                                          : HostCollectiveKind::ALL_REDUCE_SUM,
                     r.arena + range.offset, range.bytes, 0});
  }

  void broadcast(int rank, StreamKind stream, ByteRange range, int root) override {
    Rank& r = at(rank);
    check_bytes(r, range.offset, range.bytes, "broadcast");
    if (root < 0 || root >= global_world())
      throw std::out_of_range("CUDA backend: broadcast from rank " + std::to_string(root) +
                              " in a world of " + std::to_string(global_world()));
    if (global_world() == 1) return;  // the root's bytes are already everyone's
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
    // ncclCommAbort sets the abort flag at once but then waits, as a
    // destroy does, for every captured graph holding the communicator's
    // kernels to be destroyed (release() destroys them first): one thread
    // per communicator, so no abort waits behind another, joined in release().
    std::lock_guard<std::mutex> lock(abort_mutex_);
    for (auto& r : ranks_)
      for (ncclComm_t* c : {&r->bn_comm, &r->data_comm, &r->tensor_comm, &r->comm}) {
        if (!*c) continue;
        aborting_.emplace_back([comm = std::exchange(*c, nullptr), device = r->device] {
          (void)cudaSetDevice(device);
          (void)nccl().comm_abort(comm);
        });
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
        span.rank = global_rank(rank_of(r));
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
    const uint64_t need = cuda_workspace_bytes(*l.args, r.streams[stream_index(stream)]);
    const bool sums = needs_rank_sum(*l.args);
    if (!need && !sums) {
      k(*l.args, r.streams[stream_index(stream)]);
      return;
    }
    KernelArgs bound = *l.args;
    if (need) bound.workspace = &reserve_workspace(r, stream, need);
    if (sums) {
      if (!r.rank_sum)
        throw std::logic_error(
            "CUDA backend: the plan uses SyncBatchNorm but the backend was made without "
            "CudaBackendOptions::sync_batch_norm");
      bound.rank_sum = r.rank_sum.get();
    }
    k(bound, r.streams[stream_index(stream)]);
  }

  // SyncBatchNorm's training kernels sum their statistics across ranks.
  bool needs_rank_sum(const KernelArgs& a) const {
    return global_world() > 1 && a.constants().sync_batch_norm && a.node &&
           a.node->kind == NodeKind::COMPUTE && is_bn_training(a.node->op);
  }

  // Communicators split from the world's, each rank's calls in one NCCL
  // group (one thread makes them): per (communicator, group) pair, the
  // rank's data-parallel group (the ranks of its tensor index; all of them
  // without a tensor dimension), its tensor-parallel group (consecutive
  // ranks) or every rank (a communicator of its own).
  enum class Split { Data, Tensor, World };
  void split_comms(std::initializer_list<std::pair<ncclComm_t Rank::*, Split>> splits) {
    TR_NCCL_CHECK(nccl().group_start(), -1);
    try {
      for (size_t i = 0; i < ranks_.size(); ++i) {
        Rank& r = *ranks_[i];
        DeviceScope scope(r.device);
        const int g = global_rank(static_cast<int>(i));
        for (const auto& [comm, group] : splits) {
          const bool data = group == Split::Data;
          const int color = group == Split::World ? 0 : data ? g % tensor_ : g / tensor_;
          const int key = group == Split::World ? g : data ? g / tensor_ : g % tensor_;
          TR_NCCL_CHECK(nccl().comm_split(r.comm, color, key, &(r.*comm), nullptr), r.device);
        }
      }
    } catch (...) {
      (void)nccl().group_end();
      throw;
    }
    TR_NCCL_CHECK(nccl().group_end(), -1);
  }

  // A second communicator over every rank for SyncBatchNorm (with a tensor
  // dimension too, each rank computes its own samples outside the split layers).
  void split_bn_comms() {
    split_comms({{&Rank::bn_comm, Split::World}});
    for (auto& r : ranks_) r->rank_sum = std::make_unique<NcclRankSum>(r->bn_comm, r->device);
  }

  // The mesh's groups.
  void split_mesh_comms() {
    split_comms({{&Rank::data_comm, Split::Data}, {&Rank::tensor_comm, Split::Tensor}});
  }

  // One small all-reduce on each communicator, uncaptured, before any
  // graph is captured: whatever NCCL still sets up at a communicator's first
  // collective happens here, outside every graph.
  void warm_communicators() {
    std::vector<float*> scratch(ranks_.size(), nullptr);
    try {
      for (size_t i = 0; i < ranks_.size(); ++i) {
        DeviceScope scope(ranks_[i]->device);
        void* p = nullptr;
        TR_CUDA_CHECK(cudaMalloc(&p, sizeof(float)), ranks_[i]->device);
        scratch[i] = static_cast<float*>(p);
        TR_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(float),
                                      ranks_[i]->streams[stream_index(StreamKind::UPDATE)]),
                      ranks_[i]->device);
      }
      // The world's, SyncBatchNorm's and the mesh's groups'.
      for (ncclComm_t Rank::*which :
           {&Rank::comm, &Rank::bn_comm, &Rank::data_comm, &Rank::tensor_comm}) {
        if (!(ranks_.front().get()->*which)) continue;
        TR_NCCL_CHECK(nccl().group_start(), -1);
        try {
          for (size_t i = 0; i < ranks_.size(); ++i) {
            Rank& r = *ranks_[i];
            TR_NCCL_CHECK(nccl().all_reduce(scratch[i], scratch[i], 1, ncclFloat, ncclSum, r.*which,
                                            r.streams[stream_index(StreamKind::UPDATE)]),
                          r.device);
          }
        } catch (...) {
          (void)nccl().group_end();
          throw;
        }
        TR_NCCL_CHECK(nccl().group_end(), -1);
      }
      for (size_t i = 0; i < ranks_.size(); ++i) {
        DeviceScope scope(ranks_[i]->device);
        TR_CUDA_CHECK(cudaStreamSynchronize(ranks_[i]->streams[stream_index(StreamKind::UPDATE)]),
                      ranks_[i]->device);
      }
    } catch (...) {
      for (size_t i = 0; i < ranks_.size(); ++i)
        if (scratch[i]) (void)cudaFree(scratch[i]);
      throw;
    }
    for (size_t i = 0; i < ranks_.size(); ++i) {
      DeviceScope scope(ranks_[i]->device);
      (void)cudaFree(scratch[i]);
    }
  }

  // Grows before the launch (its arguments are fixed when it is launched or
  // captured); the old buffer is retired, as queued launches and captured
  // graphs may still use it.
  const StreamWorkspace& reserve_workspace(Rank& r, StreamKind stream, uint64_t bytes) {
    StreamWorkspace& w = r.workspaces[stream_index(stream)];
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

  // The rank's streams without repeats (one stream serves all five when
  // the backend runs on one).
  static std::vector<cudaStream_t> distinct_streams(const Rank& r) {
    std::vector<cudaStream_t> out;
    for (cudaStream_t s : r.streams)
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    return out;
  }

  // Capture off: what a capture would have recorded, kept for replay. Host
  // functions run at every replay, like a captured graph's host nodes.
  void record_launch(Rank& r, StreamKind stream, Launch launch) {
    launch.tag.stream = stream;
    RecordedOp op{RecordedOp::Kind::LAUNCH, stream, std::move(launch), 0, nullptr};
    if (op.launch.kind == LaunchKind::HOST_FUNC) {
      op.host_call = &r.kept.emplace_back(HostCall{&r, std::move(op.launch.host_func), false});
      op.launch.host_func = nullptr;
    }
    r.recorded.push_back(std::move(op));
  }

  // Replays a recorded program: the launches one by one, each as its own
  // CUDA launch (profiled per launch when profiling is on). Like a graph
  // launched on `stream`, it starts after the work already on `stream` and
  // the work it forked joins back there, as the capture protocol arranged.
  void replay(Rank& r, StreamKind stream, const GraphSlot& slot) {
    DeviceScope scope(r.device);
    cudaStream_t launched_on = r.streams[stream_index(stream)];
    cudaStream_t primary = r.streams[stream_index(slot.primary)];
    // The program forks from its primary stream and joins back there; when
    // launched on another stream it must start after that stream's work and
    // finish before that stream's next work, as a graph launched there would.
    const bool bridge = launched_on != primary;
    if (bridge) join(r, launched_on, primary);
    for (const RecordedOp& op : slot.program) {
      cudaStream_t s = r.streams[stream_index(op.stream)];
      switch (op.kind) {
        case RecordedOp::Kind::RECORD:
          TR_CUDA_CHECK(cudaEventRecord(event(r, op.event), s), r.device);
          break;
        case RecordedOp::Kind::WAIT:
          TR_CUDA_CHECK(cudaStreamWaitEvent(s, event(r, op.event), 0), r.device);
          break;
        case RecordedOp::Kind::LAUNCH:
          if (op.host_call) {
            TR_CUDA_CHECK(cudaLaunchHostFunc(s, run_host_call, op.host_call), r.device);
            break;
          }
          run_launch(r, op.stream, op.launch);
          break;
      }
    }
    if (bridge) join(r, primary, launched_on);
  }

  // `to` waits for the work queued on `from` so far.
  void join(Rank& r, cudaStream_t from, cudaStream_t to) {
    if (!r.bridge_event)
      TR_CUDA_CHECK(cudaEventCreateWithFlags(&r.bridge_event, cudaEventDisableTiming), r.device);
    TR_CUDA_CHECK(cudaEventRecord(r.bridge_event, from), r.device);
    TR_CUDA_CHECK(cudaStreamWaitEvent(to, r.bridge_event, 0), r.device);
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

  static ncclDataType_t nccl_type(DType dt) {
    return dt == DType::FP16 ? ncclHalf : dt == DType::BF16 ? ncclBfloat16 : ncclFloat;
  }

  // Sequence parallel: the group's samples of a feature gathered from each
  // rank's (rank order is NCCL's block order), or each rank's samples of
  // the sum of the group's partial products.
  static void batch_collective(Rank& r, cudaStream_t s, const KernelArgs& a, ncclComm_t c,
                               int group) {
    const bool gather = a.node->range_op == RangeOp::ALLGATHER_BATCH;
    const TensorArg& in = a.in.at(0);
    const TensorArg& out = a.out.at(0);
    const uint64_t part = (gather ? in : out).desc->device_bytes();
    if ((gather ? out : in).desc->device_bytes() != part * static_cast<uint64_t>(group))
      throw std::logic_error("CUDA backend: " + std::string(range_op_name(a.node->range_op)) +
                             ": the group's batch is not " + std::to_string(group) +
                             " ranks' samples");
    const DType dt = in.desc->dtype;
    const size_t count = dt == DType::FP32 ? part / 4 : part / 2;
    if (gather)
      TR_NCCL_CHECK(nccl().all_gather(in.data, out.data, count, nccl_type(dt), c, s), r.device);
    else
      TR_NCCL_CHECK(nccl().reduce_scatter(in.data, out.data, count, nccl_type(dt), ncclSum, c, s),
                    r.device);
  }

  // The spans of one node form one NCCL group.
  void collective(Rank& r, cudaStream_t s, const Launch& l) {
    if (!l.args || !l.args->node)
      throw std::invalid_argument("CUDA backend: a collective launch without its node");
    const RangeOp range_op = l.args->node->range_op;
    const ncclRedOp_t op = range_op == RangeOp::ALLREDUCE_MEAN   ? ncclAvg
                           : range_op == RangeOp::REDUCE_SCATTER ? ncclAvg
                           : range_op == RangeOp::ALLREDUCE_MAX  ? ncclMax
                                                                 : ncclSum;
    if (global_world() == 1) return;  // the compiler emits none for one rank; nothing to do
    // The node's group of the mesh: its communicator, size and this rank's place.
    ncclComm_t c = comm(r);
    int world = global_world(), me = global_rank(rank_of(r));
    if (tensor_ > 1 && l.args->node->group != CommGroup::World) {
      const bool tensor = l.args->node->group == CommGroup::Tensor;
      c = tensor ? r.tensor_comm : r.data_comm;
      world = tensor ? tensor_ : world / tensor_;
      me = tensor ? me % tensor_ : me / tensor_;
    }
    TR_NCCL_CHECK(nccl().group_start(), r.device);
    if (range_op == RangeOp::ALLGATHER_BATCH || range_op == RangeOp::REDUCE_SCATTER_BATCH) {
      batch_collective(r, s, *l.args, c, world);
      TR_NCCL_CHECK(nccl().group_end(), r.device);
      return;
    }
    // A tensor-parallel sum of features, in place and in their dtype.
    for (const TensorArg& t : l.args->in) {
      const DType dt = t.desc->dtype;
      const uint64_t bytes = t.desc->device_bytes();
      TR_NCCL_CHECK(nccl().all_reduce(t.data, t.data, dt == DType::FP32 ? bytes / 4 : bytes / 2,
                                      nccl_type(dt), op, c, s),
                    r.device);
    }
    const auto& spans = l.args->in_spans;
    for (size_t i = 0; i < spans.size(); ++i) {
      const SpanArg& span = spans[i];
      if (!span.bytes) continue;
      if (range_op == RangeOp::REDUCE_SCATTER) {
        // The shares differ in length at the end, which ncclReduceScatter
        // does not take: a reduce to each share's rank, into its shard.
        const SpanArg& shard = l.args->out_spans.at(i);
        for (int root = 0; root < world; ++root) {
          const ShardShare share = shard_share(span.bytes, root, world);
          if (share.bytes() == 0) continue;
          if (root == me && shard.bytes < share.bytes())
            throw std::logic_error(
                "CUDA backend: no room for this rank's share of a reduce-scatter");
          TR_NCCL_CHECK(nccl().reduce(static_cast<uint8_t*>(span.data) + share.begin, shard.data,
                                      share.bytes() / 4, ncclFloat, op, root, c, s),
                        r.device);
        }
        continue;
      }
      if (range_op != RangeOp::ALLGATHER) {
        TR_NCCL_CHECK(nccl().all_reduce(span.data, span.data, span.floats(), ncclFloat, op, c, s),
                      r.device);
        continue;
      }
      // The shares (core/data_shard.h) differ in length at the end, which
      // ncclAllGather does not take: a broadcast from each share's rank.
      for (int root = 0; root < world; ++root) {
        const ShardShare share = shard_share(span.bytes, root, world);
        if (share.bytes() == 0) continue;
        uint8_t* at = static_cast<uint8_t*>(span.data) + share.begin;
        TR_NCCL_CHECK(nccl().broadcast(at, at, share.bytes(), ncclUint8, root, c, s), r.device);
      }
    }
    TR_NCCL_CHECK(nccl().group_end(), r.device);
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
    // One rank's broadcast or all-reduce is itself: a world of one has no
    // communicator (and needs no NCCL).
    if (global_world() == 1) return;
    TR_NCCL_CHECK(nccl().group_start(), -1);
    try {
      for (size_t i = 0; i < round.size(); ++i) {
        const Rank& r = *ranks_[i];
        const ncclComm_t c = comm(r);
        cudaStream_t s = r.streams[stream_index(round[i].stream)];
        for (const HostCollective& call : round[i].calls) {
          if (call.bytes == 0) continue;
          if (call.kind == HostCollectiveKind::BROADCAST)
            TR_NCCL_CHECK(
                nccl().broadcast(call.data, call.data, call.bytes, ncclUint8, call.root, c, s),
                r.device);
          else
            TR_NCCL_CHECK(
                nccl().all_reduce(
                    call.data, call.data, call.bytes / 4, ncclFloat,
                    call.kind == HostCollectiveKind::ALL_REDUCE_MEAN ? ncclAvg : ncclSum, c, s),
                r.device);
        }
      }
    } catch (...) {
      (void)nccl().group_end();
      throw;
    }
    TR_NCCL_CHECK(nccl().group_end(), -1);
  }

  // Node 0 makes the unique id; the rendezvous checks that the nodes agree
  // and hands it to all. NCCL needs the local ranks' ncclCommInitRank calls
  // in one group when one thread creates them.
  void init_across_nodes(const CudaBackendOptions& o, std::vector<ncclComm_t>& comms) {
    net::RendezvousOptions ro;
    ro.address = o.nodes.rendezvous;
    ro.nodes = o.nodes.nodes;
    ro.node_rank = o.nodes.node_rank;
    ro.local_ranks = static_cast<int>(devices_.size());
    ro.fingerprint = o.fingerprint;
    ro.timeout = o.nodes.timeout;
    ncclUniqueId id{};
    if (ro.node_rank == 0) {
      TR_NCCL_CHECK(nccl().get_unique_id(&id), devices_.front());
      ro.blob.assign(reinterpret_cast<const char*>(&id), sizeof id);
    }
    const net::NodeLayout layout = net::rendezvous(ro);
    if (layout.blob.size() != sizeof id)
      throw std::runtime_error("CUDA backend: node 0 sent an NCCL unique id of " +
                               std::to_string(layout.blob.size()) + " bytes, this NCCL expects " +
                               std::to_string(sizeof id) + "; use the same NCCL on every node");
    std::memcpy(&id, layout.blob.data(), sizeof id);
    global_world_ = layout.world;
    first_rank_ = layout.first_global_rank();
    for (auto& r : ranks_) {
      DeviceScope scope(r->device);
      void* p = nullptr;
      TR_CUDA_CHECK(cudaMalloc(&p, sizeof(int32_t)), r->device);
      r->vote = static_cast<int32_t*>(p);
    }
    TR_NCCL_CHECK(nccl().group_start(), -1);
    try {
      for (size_t i = 0; i < devices_.size(); ++i) {
        DeviceScope scope(devices_[i]);  // ncclCommInitRank takes the current device
        TR_NCCL_CHECK(
            nccl().comm_init_rank(&comms[i], layout.world, id, first_rank_ + static_cast<int>(i)),
            devices_[i]);
      }
    } catch (...) {
      (void)nccl().group_end();
      destroy_comms(comms);
      throw;
    }
    const ncclResult_t res = nccl().group_end();
    if (res != ncclSuccess) {
      destroy_comms(comms);
      check_nccl(res, "ncclCommInitRank across nodes", -1);
    }
  }
  static void destroy_comms(std::vector<ncclComm_t>& comms) noexcept {
    for (ncclComm_t& c : comms)
      if (c) (void)nccl().comm_destroy(std::exchange(c, nullptr));
  }

  // Frees what exists; errors are ignored (a destructor must not throw).
  void release() noexcept {
    int previous = 0;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess;
    // Every rank's graphs go before any communicator: NCCL's destroy waits
    // for the graph executables that hold its kernels, on every rank.
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (cudaSetDevice(r.device) != cudaSuccess) continue;
      for (cudaStream_t s : r.streams)
        if (s) (void)cudaStreamSynchronize(s);
      for (GraphSlot& g : r.graphs)
        if (g.exec) (void)cudaGraphExecDestroy(g.exec);
      r.graphs.clear();
    }
    {
      // Aborted communicators finish aborting once their graphs are gone.
      std::lock_guard<std::mutex> lock(abort_mutex_);
      for (std::thread& t : aborting_)
        if (t.joinable()) t.join();
      aborting_.clear();
    }
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (cudaSetDevice(r.device) != cudaSuccess) continue;
      for (ncclComm_t* c : {&r.bn_comm, &r.data_comm, &r.tensor_comm})
        if (*c) (void)nccl().comm_destroy(std::exchange(*c, nullptr));
      if (r.comm) (void)nccl().comm_destroy(r.comm);
      r.comm = nullptr;
    }
    for (auto& rp : ranks_) {
      Rank& r = *rp;
      if (cudaSetDevice(r.device) != cudaSuccess) continue;
      if (r.vote) (void)cudaFree(r.vote);
      r.handles.reset();  // the streams have drained; the handles go before them
      for (cudaEvent_t e : r.events) (void)cudaEventDestroy(e);
      for (Timed& t : r.timed) {
        (void)cudaEventDestroy(t.start);
        (void)cudaEventDestroy(t.end);
      }
      if (r.origin) (void)cudaEventDestroy(r.origin);
      if (r.bridge_event) (void)cudaEventDestroy(r.bridge_event);
      for (StreamWorkspace& w : r.workspaces)
        if (w.data) (void)cudaFree(w.data);
      for (void* p : r.retired) (void)cudaFree(p);
      if (r.arena) (void)cudaFree(r.arena);
      for (cudaStream_t s : distinct_streams(r))
        if (s) (void)cudaStreamDestroy(s);
      if (r.clock) (void)cudaStreamDestroy(r.clock);
    }
    ranks_.clear();
    for (const void* p : pinned_) (void)cudaHostUnregister(const_cast<void*>(p));
    pinned_.clear();
    if (restore) (void)cudaSetDevice(previous);
  }

  std::vector<int> devices_;
  int tensor_ = 1;       // CudaBackendOptions::tensor
  bool capture_ = true;  // false: graphs are recorded launch lists (CudaBackendOptions)
  std::mutex pin_mutex_;
  std::set<const void*> pinned_;  // host memory this backend page-locked
  std::vector<std::unique_ptr<Rank>> ranks_;
  HostRendezvous rendezvous_;
  int global_world_ = 0;               // across nodes; 0: this process is the world
  std::vector<std::thread> aborting_;  // ncclCommAbort of each aborted communicator
  int first_rank_ = 0;                 // the global rank of local rank 0
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

// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/cpu_backend.h"

#include <sys/mman.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "backends/cpu/channel_blocks.h"
#include "backends/cpu/collectives.h"
#include "backends/cpu/cpu_graph.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/step_checker.h"
#include "backends/cpu/stream_worker.h"
#include "backends/cpu/stream_workspace.h"
#include "core/data_shard.h"

namespace tr::cpu {

namespace {

struct Event {
  std::mutex mutex;
  std::condition_variable done;
  uint64_t recorded = 0;   // generations enqueued
  uint64_t completed = 0;  // generations reached by their stream
  // Set while the event belongs to an ongoing capture: the nodes a waiter depends on.
  int capture = -1;
  std::vector<int> nodes;
};

// Per stream capture state: the nodes the next captured launch depends on.
struct CaptureState {
  bool active = false;
  std::vector<int> frontier;
};

// Anonymous mappings are page-aligned (cudaMalloc promises 256 bytes) and
// zero-filled lazily by the kernel, so a large plan costs nothing until touched.
struct Arena {
  uint8_t* base = nullptr;
  size_t length = 0;
  void release() {
    if (base) munmap(base, length);
    base = nullptr;
    length = 0;
  }
  ~Arena() { release(); }
};

struct Rank {
  std::array<std::unique_ptr<StreamWorker>, kNumStreams> streams;
  std::array<CaptureState, kNumStreams> capture;
  std::vector<std::unique_ptr<Event>> events;
  std::vector<std::unique_ptr<CpuGraph>> graphs;
  std::unique_ptr<CpuGraph> building;  // the graph being captured
  int capture_id = -1;
  StreamKind capture_primary = StreamKind::COMP_1;
  Arena arena;
  // Host-issued collectives between group_start and group_end.
  bool grouping = false;
  StreamKind group_stream = StreamKind::UPDATE;
  std::vector<CollectiveCall> group;
  // Kernel scratch per stream; the args of captured launches bound to it; the
  // largest need of each stream in the capture under way.
  StreamWorkspaces workspaces;
  std::deque<KernelArgs> bound_args;
  std::unique_ptr<CollectiveRankSum> rank_sum;  // SyncBatchNorm's in-kernel sums
  std::array<uint64_t, kNumStreams> capture_need{};
  std::unique_ptr<StepChecker> checker;  // CpuBackendOptions::check_step_schedule
  std::mutex checker_mutex;
};

// A launch enqueued outside capture, with the args copy its workspace binding needs.
struct DirectLaunch {
  Launch launch;
  std::optional<KernelArgs> args;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& o)
      : options_(o),
        own_(o.kernels ? *o.kernels : best_own_kernels()),
        native_bf16_(o.native_bf16),
        collectives_(o.world, o.processes),
        ranks_(static_cast<size_t>(o.world)) {
    if (o.world < 1) throw std::invalid_argument("CPU backend: world size must be at least 1");
    if (o.processes && o.tensor > 1)
      throw std::invalid_argument("CPU backend: a tensor dimension across processes");
    if (o.tensor < 1 || o.world % o.tensor != 0)
      throw std::invalid_argument("CPU backend: mesh tensor=" + std::to_string(o.tensor) +
                                  " does not divide " + std::to_string(o.world) + " ranks");
    if (o.tensor > 1) {
      for (int t = 0; t < o.tensor; ++t)
        data_groups_.push_back(std::make_unique<Collectives>(o.world / o.tensor));
      for (int d = 0; d < o.world / o.tensor; ++d)
        tensor_groups_.push_back(std::make_unique<Collectives>(o.tensor));
    }
    for (size_t i = 0; i < ranks_.size(); ++i) {
      for (auto& s : ranks_[i].streams) s = std::make_unique<StreamWorker>();
      int index = 0;
      // SyncBatchNorm sums over every rank: each computes its own samples.
      Collectives& world = group(static_cast<int>(i), CommGroup::World, index);
      ranks_[i].rank_sum = std::make_unique<CollectiveRankSum>(world, index);
      if (o.check_step_schedule)
        ranks_[i].checker = std::make_unique<StepChecker>(static_cast<int>(i));
    }
    origin_ = std::chrono::steady_clock::now();
  }

  ~CpuBackend() override {
    // Workers must stop before the arenas and graphs they point into go away.
    for (Rank& r : ranks_)
      for (auto& s : r.streams) s.reset();
  }

  std::string name() const override { return "cpu"; }
  bool warm_up_before_capture() const override { return options_.warm_up_before_capture; }
  int world_size() const override { return options_.world; }
  int global_world() const override { return collectives_.global_world(); }
  int global_rank(int local_rank) const override {
    return options_.processes ? options_.processes->process_rank() * options_.world + local_rank
                              : local_rank;
  }
  bool any_process(bool flag) override {
    if (!options_.processes) return flag;
    const int n = options_.processes->processes();
    std::vector<uint8_t> flags(static_cast<size_t>(n));
    const uint8_t mine = flag ? 1 : 0;
    // Its own channel: a step's collectives may still be under way.
    options_.processes->all_gather(&mine, 1, flags.data(), 1);
    return std::any_of(flags.begin(), flags.end(), [](uint8_t f) { return f != 0; });
  }

  void allocate_arenas(uint64_t bytes) override {
    for (Rank& r : ranks_) {
      r.arena.release();
      const size_t length = std::max<size_t>(bytes, 1);
      void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        throw std::runtime_error("CPU backend: cannot allocate an arena of " +
                                 std::to_string(bytes) + " bytes for rank " +
                                 std::to_string(&r - ranks_.data()));
      r.arena.base = static_cast<uint8_t*>(p);
      r.arena.length = length;
    }
    arena_bytes_ = bytes;
  }
  uint8_t* arena(int rank) override { return at(rank).arena.base; }
  uint64_t arena_bytes() const override { return arena_bytes_; }

  EventId create_event(int rank) override {
    Rank& r = at(rank);
    if (r.capture_id >= 0)
      throw std::logic_error("CPU backend: events must be created before capture begins");
    r.events.push_back(std::make_unique<Event>());
    return static_cast<EventId>(r.events.size() - 1);
  }

  void record(int rank, StreamKind stream, EventId id) override {
    Rank& r = at(rank);
    Event& e = event(r, id);
    CaptureState& cs = r.capture[stream_index(stream)];
    if (cs.active) {
      // A record at the very start of a capture needs something to point at.
      if (cs.frontier.empty()) cs.frontier.push_back(add_node(r, stream, {}, {}, true));
      e.capture = r.capture_id;
      e.nodes = cs.frontier;
      return;
    }
    check(r, [&](StepChecker& c) { c.record(stream, id); });
    uint64_t generation;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      generation = ++e.recorded;
    }
    r.streams[stream_index(stream)]->enqueue([&e, generation] {
      {
        std::lock_guard<std::mutex> lock(e.mutex);
        e.completed = std::max(e.completed, generation);
      }
      e.done.notify_all();
    });
  }

  void wait(int rank, StreamKind stream, EventId id) override {
    Rank& r = at(rank);
    Event& e = event(r, id);
    CaptureState& cs = r.capture[stream_index(stream)];
    if (r.capture_id >= 0 && e.capture == r.capture_id) {
      // Waiting on an event recorded inside the capture joins this stream to it.
      cs.active = true;
      for (int n : e.nodes)
        if (std::find(cs.frontier.begin(), cs.frontier.end(), n) == cs.frontier.end())
          cs.frontier.push_back(n);
      return;
    }
    if (cs.active)
      throw std::logic_error(
          "CPU backend: a capturing stream cannot wait on an event recorded "
          "outside the capture");
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(e.mutex);
      target = e.recorded;
    }
    if (target == 0) return;  // never recorded: nothing to wait for, as in CUDA
    check(r, [&](StepChecker& c) { c.wait(stream, id); });
    r.streams[stream_index(stream)]->enqueue([&e, target] {
      std::unique_lock<std::mutex> lock(e.mutex);
      e.done.wait(lock, [&] { return e.completed >= target; });
    });
  }

  void synchronize(int rank, StreamKind stream) override {
    Rank& r = at(rank);
    r.streams[stream_index(stream)]->synchronize();
    check(r, [&](StepChecker& c) { c.host_waits_for(stream); });
  }
  void synchronize(int rank) override {
    Rank& r = at(rank);
    for (auto& s : r.streams) s->synchronize();
    check(r, [&](StepChecker& c) {
      for (int s = 0; s < kNumStreams; ++s) c.host_waits_for(static_cast<StreamKind>(s));
    });
  }

  void synchronize_event(int rank, EventId id) override {
    Rank& r = at(rank);
    Event& e = event(r, id);
    if (r.capture_id >= 0)
      throw std::logic_error("CPU backend: the host cannot wait for an event during a capture");
    {
      std::unique_lock<std::mutex> lock(e.mutex);
      const uint64_t target = e.recorded;
      e.done.wait(lock, [&] { return e.completed >= target; });
    }
    // The work the event follows has run, on its stream or on those it waited for.
    for (auto& s : r.streams) s->rethrow_error();
    check(r, [&](StepChecker& c) { c.host_waits_for_event(id); });
  }

  void enqueue(int rank, StreamKind stream, Launch launch) override {
    Rank& r = at(rank);
    CaptureState& cs = r.capture[stream_index(stream)];
    launch.tag.stream = stream;
    if (cs.active) {
      const uint64_t need = StreamWorkspaces::need(launch);
      if (need || needs_rank_sum(launch))
        bind(r, stream, launch, r.bound_args.emplace_back(*launch.args));
      r.capture_need[stream_index(stream)] = std::max(r.capture_need[stream_index(stream)], need);
      const int n = add_node(r, stream, std::move(launch), cs.frontier, false);
      cs.frontier = {n};
      return;
    }
    if (r.capture_id >= 0 && launch.kind == LaunchKind::COLLECTIVE)
      throw std::logic_error("CPU backend: collective outside the capture while capturing");
    auto task = std::make_shared<DirectLaunch>();
    task->launch = std::move(launch);
    check(r, [&](StepChecker& c) { c.issue(stream, {&task->launch}, task->launch.tag.label); });
    if (StreamWorkspaces::need(task->launch) || needs_rank_sum(task->launch))
      bind(r, stream, task->launch, task->args.emplace(*task->launch.args));
    r.streams[stream_index(stream)]->enqueue([this, rank, task] { execute(rank, task->launch); });
  }

  void begin_capture(int rank, StreamKind primary) override {
    Rank& r = at(rank);
    if (r.capture_id >= 0) throw std::logic_error("CPU backend: capture already in progress");
    r.capture_id = next_capture_++;
    r.capture_primary = primary;
    r.building = std::make_unique<CpuGraph>();
    r.building->rank = rank;
    r.capture[stream_index(primary)] = CaptureState{true, {}};
    r.capture_need.fill(0);
  }

  GraphHandle end_capture(int rank, StreamKind primary) override {
    Rank& r = at(rank);
    if (r.capture_id < 0 || primary != r.capture_primary)
      throw std::logic_error("CPU backend: end_capture on a stream that is not capturing");
    std::unique_ptr<CpuGraph> g = std::move(r.building);
    // Every stream that joined must flow back into the primary (CUDA reports
    // cudaErrorStreamCaptureUnjoined otherwise).
    const std::vector<bool> reach = reaches(*g, r.capture[stream_index(primary)].frontier);
    for (int s = 0; s < kNumStreams; ++s) {
      const CaptureState& cs = r.capture[static_cast<size_t>(s)];
      if (!cs.active || s == static_cast<int>(primary)) continue;
      for (int n : cs.frontier)
        if (!reach[static_cast<size_t>(n)]) {
          reset_capture(r);
          throw std::logic_error("CPU backend: stream " +
                                 std::string(stream_kind_name(static_cast<StreamKind>(s))) +
                                 " joined the capture but its work was not joined back into " +
                                 std::string(stream_kind_name(primary)) + " before end_capture");
        }
    }
    reset_capture(r);
    if (options_.check_dependencies) g->verify_dependencies();
    size_workspaces(rank, r);
    r.graphs.push_back(std::move(g));
    return static_cast<GraphHandle>(r.graphs.size() - 1);
  }

  void abort_capture(int rank) noexcept override {
    if (rank < 0 || rank >= options_.world) return;
    Rank& r = ranks_[static_cast<size_t>(rank)];
    if (r.capture_id < 0) return;
    r.building.reset();
    r.bound_args.clear();
    reset_capture(r);
  }

  void launch_graph(int rank, StreamKind stream, GraphHandle handle) override {
    Rank& r = at(rank);
    if (handle < 0 || static_cast<size_t>(handle) >= r.graphs.size())
      throw std::out_of_range("CPU backend: no graph " + std::to_string(handle));
    if (r.capture[stream_index(stream)].active)
      throw std::logic_error("CPU backend: graph launch inside a capture");
    const CpuGraph* g = r.graphs[static_cast<size_t>(handle)].get();
    check(r, [&](StepChecker& c) {
      std::vector<const Launch*> launches;
      std::string label = "a graph";
      for (const CapturedNode& n : g->nodes) {
        if (n.empty) continue;
        if (launches.empty() && n.launch.tag.graph != GraphId::NUM_GRAPH_IDS)
          label = std::string(graph_id_name(n.launch.tag.graph));
        launches.push_back(&n.launch);
      }
      c.issue(stream, launches, label);
    });
    // Capture order is a topological order of the recorded edges, so running
    // the nodes in index order honours every dependency.
    r.streams[stream_index(stream)]->enqueue([this, rank, g] {
      for (const CapturedNode& n : g->nodes)
        if (!n.empty) execute(rank, n.launch);
    });
  }

  void all_reduce(int rank, StreamKind stream, ByteRange range, ReduceOp op) override {
    Rank& r = at(rank);
    check_range(r, range, "all-reduce");
    if (range.bytes % 4 != 0)
      throw std::invalid_argument("CPU backend: an all-reduce of " + std::to_string(range.bytes) +
                                  " bytes is not a whole number of floats");
    host_collective(
        rank, stream,
        {op == ReduceOp::MEAN ? CollectiveKind::ALL_REDUCE_MEAN : CollectiveKind::ALL_REDUCE_SUM,
         r.arena.base + range.offset, range.bytes, 0, "host all-reduce"});
  }

  void broadcast(int rank, StreamKind stream, ByteRange range, int root) override {
    Rank& r = at(rank);
    check_range(r, range, "broadcast");
    if (root < 0 || root >= global_world())
      throw std::out_of_range("CPU backend: broadcast from rank " + std::to_string(root) +
                              " in a world of " + std::to_string(global_world()));
    host_collective(
        rank, stream,
        {CollectiveKind::BROADCAST, r.arena.base + range.offset, range.bytes, root, "broadcast"});
  }

  void group_start(int rank) override {
    Rank& r = at(rank);
    if (r.grouping) throw std::logic_error("CPU backend: group_start inside a group");
    r.grouping = true;
    r.group.clear();
  }

  void group_end(int rank) override {
    Rank& r = at(rank);
    if (!r.grouping) throw std::logic_error("CPU backend: group_end without group_start");
    r.grouping = false;
    if (r.group.empty()) return;
    enqueue_collective(rank, r.group_stream, std::exchange(r.group, {}));
  }

  void abort_collectives(const std::string& reason) override {
    collectives_.abort(reason);
    for (auto* groups : {&data_groups_, &tensor_groups_})
      for (auto& g : *groups) g->abort(reason);
  }

  // The flag is read and a span kept under the one lock, so no span can land
  // after profiling was switched off: the trainer stamps each batch it takes
  // with the step it ends, and a late span would be stamped with another.
  void set_profiling(bool enabled) override {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    profiling_ = enabled;
  }
  std::vector<ProfileSpan> take_profile() override {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    return std::exchange(spans_, {});
  }

  const CpuGraph& graph(int rank, GraphHandle h) {
    return *at(rank).graphs.at(static_cast<size_t>(h));
  }
  uint64_t workspace_bytes(int rank, StreamKind stream) {
    return at(rank).workspaces.bytes(stream);
  }

 private:
  Rank& at(int rank) {
    if (rank < 0 || rank >= options_.world)
      throw std::out_of_range("CPU backend: no rank " + std::to_string(rank));
    return ranks_[static_cast<size_t>(rank)];
  }
  template <class F>
  static void check(Rank& r, F&& f) {
    if (!r.checker) return;
    std::lock_guard<std::mutex> lock(r.checker_mutex);
    f(*r.checker);
  }
  static Event& event(Rank& r, EventId id) {
    if (id < 0 || static_cast<size_t>(id) >= r.events.size())
      throw std::out_of_range("CPU backend: no event " + std::to_string(id));
    return *r.events[static_cast<size_t>(id)];
  }

  void check_range(const Rank& r, ByteRange range, const char* what) const {
    if (!r.arena.base || range.offset + range.bytes > arena_bytes_)
      throw std::out_of_range(std::string("CPU backend: ") + what + " of bytes [" +
                              std::to_string(range.offset) + ", " +
                              std::to_string(range.offset + range.bytes) +
                              ") outside the arena of " + std::to_string(arena_bytes_) + " bytes");
  }

  void host_collective(int rank, StreamKind stream, CollectiveCall call) {
    Rank& r = at(rank);
    if (r.capture[stream_index(stream)].active || r.capture_id >= 0)
      throw std::logic_error("CPU backend: host-issued collective while capturing");
    if (!r.grouping) {
      enqueue_collective(rank, stream, {std::move(call)});
      return;
    }
    if (!r.group.empty() && r.group_stream != stream)
      throw std::logic_error("CPU backend: the collectives of one group must share a stream");
    r.group_stream = stream;
    r.group.push_back(std::move(call));
  }

  void enqueue_collective(int rank, StreamKind stream, std::vector<CollectiveCall> calls) {
    Launch l;
    l.kind = LaunchKind::HOST_FUNC;
    l.tag.stream = stream;
    l.tag.label = calls.size() == 1 ? std::string(calls[0].label) : "collective group";
    l.host_func = [this, rank, calls = std::move(calls)] { collectives_.run(rank, calls); };
    enqueue(rank, stream, std::move(l));
  }

  // Grows the workspaces to what the capture just ended needs, so its graph
  // never allocates when it runs.
  void size_workspaces(int rank, Rank& r) {
    bool grow = false;
    for (int s = 0; s < kNumStreams; ++s)
      grow |=
          r.capture_need[static_cast<size_t>(s)] > r.workspaces.bytes(static_cast<StreamKind>(s));
    if (!grow) return;
    synchronize(rank);  // a workspace being replaced must not be in use
    for (int s = 0; s < kNumStreams; ++s)
      r.workspaces.reserve(static_cast<StreamKind>(s), r.capture_need[static_cast<size_t>(s)]);
  }

  int add_node(Rank& r, StreamKind stream, Launch launch, std::vector<int> preds, bool empty) {
    CapturedNode n;
    n.launch = std::move(launch);
    n.launch.tag.stream = stream;
    n.preds = std::move(preds);
    n.empty = empty;
    r.building->nodes.push_back(std::move(n));
    return static_cast<int>(r.building->nodes.size() - 1);
  }

  // Which nodes have a path into one of `sinks` (including the sinks).
  static std::vector<bool> reaches(const CpuGraph& g, const std::vector<int>& sinks) {
    std::vector<bool> in(g.nodes.size(), false);
    for (int s : sinks) in[static_cast<size_t>(s)] = true;
    for (size_t i = g.nodes.size(); i-- > 0;)
      if (in[i])
        for (int p : g.nodes[i].preds) in[static_cast<size_t>(p)] = true;
    return in;
  }

  void reset_capture(Rank& r) {
    for (CaptureState& cs : r.capture) cs = CaptureState{};
    for (auto& e : r.events)
      if (e->capture == r.capture_id) {
        e->capture = -1;
        e->nodes.clear();
      }
    r.capture_id = -1;
  }

  // SyncBatchNorm's training kernels sum their statistics across ranks.
  bool needs_rank_sum(const Launch& l) const {
    if (l.kind != LaunchKind::KERNEL || global_world() < 2 || !l.args || !l.args->training ||
        !l.args->training->sync_batch_norm)
      return false;
    const GraphNode& n = *l.args->node;
    return n.kind == NodeKind::COMPUTE && is_bn_training(n.op);
  }

  // Points `launch` at `copy` of its args with this rank's workspace and
  // in-kernel sum bound.
  void bind(Rank& r, StreamKind stream, Launch& launch, KernelArgs& copy) {
    if (StreamWorkspaces::need(launch)) r.workspaces.bind(stream, launch, copy);
    if (needs_rank_sum(launch)) copy.rank_sum = r.rank_sum.get();
    launch.args = &copy;
  }

  void execute(int rank, const Launch& l) {
    const auto t0 = std::chrono::steady_clock::now();
    uint8_t* base = ranks_[static_cast<size_t>(rank)].arena.base;
    switch (l.kind) {
      case LaunchKind::KERNEL: {
        const GraphNode& node = *l.args->node;
        const Kernel k = launch_kernel(*l.args, own_, native_bf16_);
        if (!k)
          throw std::logic_error("CPU backend: no kernel for " +
                                 std::string(node.kind == NodeKind::COMPUTE
                                                 ? compute_op_name(node.op)
                                                 : range_op_name(node.range_op)));
        // Captured launches found their workspace sized at capture; a direct
        // launch sizes it on its first run.
        if (l.args->workspace)
          ranks_[static_cast<size_t>(rank)].workspaces.reserve(l.tag.stream,
                                                               kernel_workspace_bytes(*l.args));
        run_kernel(k, *l.args);
        break;
      }
      case LaunchKind::COPY_H2D:
        if (l.rows == 0) {
          std::memcpy(base + l.offset, l.host, l.bytes);
          break;
        }
        // Padding lanes are never written: zero since the arena was made.
        for (uint64_t r = 0, row = l.bytes / l.rows; r < l.rows; ++r)
          std::memcpy(base + l.offset + r * l.pitch, static_cast<const uint8_t*>(l.host) + r * row,
                      row);
        break;
      case LaunchKind::COPY_D2H:
        std::memcpy(l.host, base + l.offset, l.bytes);
        break;
      case LaunchKind::COLLECTIVE: {
        // The spans of one node form one group (one rendezvous).
        const RangeOp op = l.args->node->range_op;
        const CollectiveKind kind = op == RangeOp::ALLREDUCE_MEAN  ? CollectiveKind::ALL_REDUCE_MEAN
                                    : op == RangeOp::ALLREDUCE_MAX ? CollectiveKind::ALL_REDUCE_MAX
                                    : op == RangeOp::ALLGATHER     ? CollectiveKind::ALL_GATHER
                                    : op == RangeOp::REDUCE_SCATTER
                                        ? CollectiveKind::REDUCE_SCATTER_MEAN
                                        : CollectiveKind::ALL_REDUCE_SUM;
        std::vector<CollectiveCall> calls;
        const auto& in = l.args->in_spans;
        const auto& out = l.args->out_spans;
        int index = 0;
        Collectives& comm = group(rank, l.args->node->group, index);
        if (op == RangeOp::ALLGATHER_BATCH || op == RangeOp::REDUCE_SCATTER_BATCH) {
          calls.push_back(batch_call(*l.args, l.tag.label, comm.world()));
          comm.run(index, calls);
          break;
        }
        // A tensor-parallel sum of features, in place and in their dtype.
        for (const TensorArg& t : l.args->in)
          calls.push_back(
              {kind, t.data, t.desc->device_bytes(), 0, l.tag.label, nullptr, t.desc->dtype});
        for (size_t i = 0; i < in.size(); ++i) {
          calls.push_back({kind, in[i].data, in[i].bytes, 0, l.tag.label});
          if (kind == CollectiveKind::REDUCE_SCATTER_MEAN) {
            // Its share must fit where it goes.
            if (i >= out.size() ||
                out[i].bytes < shard_chunk_bytes(in[i].bytes, comm.global_world()))
              throw std::logic_error("REDUCE_SCATTER (" + l.tag.label +
                                     "): no room for this rank's share");
            calls.back().out = out[i].data;
          }
        }
        comm.run(index, calls);
        break;
      }
      case LaunchKind::HOST_FUNC:
        l.host_func();
        break;
    }
    if (profiling_.load(std::memory_order_relaxed)) {
      const auto t1 = std::chrono::steady_clock::now();
      ProfileSpan s;
      s.rank = global_rank(rank);  // a profile's ranks are global, as on CUDA
      s.tag = l.tag;
      s.start_us = std::chrono::duration<double, std::micro>(t0 - origin_).count();
      s.end_us = std::chrono::duration<double, std::micro>(t1 - origin_).count();
      std::lock_guard<std::mutex> lock(profile_mutex_);
      if (profiling_.load(std::memory_order_relaxed)) spans_.push_back(std::move(s));
    }
  }

  CpuBackendOptions options_;
  const OwnKernels& own_;
  const bool native_bf16_;
  Collectives collectives_;
  // With a tensor dimension: a communicator per data-parallel group (ranks
  // t, t + tensor, ...) and per tensor-parallel group (consecutive ranks).
  std::vector<std::unique_ptr<Collectives>> data_groups_, tensor_groups_;

  // Sequence parallel's gather (the group's samples of a feature from each
  // rank's) or reduce-scatter (each rank's samples of the sum).
  static CollectiveCall batch_call(const KernelArgs& a, std::string_view label, int group) {
    const bool gather = a.node->range_op == RangeOp::ALLGATHER_BATCH;
    const TensorArg& in = a.in.at(0);
    const TensorArg& out = a.out.at(0);
    const uint64_t part = (gather ? in : out).desc->device_bytes();
    if ((gather ? out : in).desc->device_bytes() != part * static_cast<uint64_t>(group))
      throw std::logic_error("CPU backend: " + std::string(range_op_name(a.node->range_op)) + " (" +
                             std::string(label) + "): the group's batch is not " +
                             std::to_string(group) + " ranks' samples");
    return {gather ? CollectiveKind::GATHER_BLOCKS : CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS,
            in.data,
            in.desc->device_bytes(),
            0,
            label,
            out.data,
            in.desc->dtype};
  }

  // The communicator of `rank`'s group `g`, and the rank's index in it.
  Collectives& group(int rank, CommGroup g, int& index) {
    const int t = options_.tensor;
    if (g == CommGroup::World || t == 1) {
      if (g == CommGroup::Tensor)
        throw std::logic_error("a tensor-parallel collective on a mesh without a tensor dimension");
      index = rank;
      return collectives_;
    }
    index = g == CommGroup::Data ? rank / t : rank % t;
    return g == CommGroup::Data ? *data_groups_[static_cast<size_t>(rank % t)]
                                : *tensor_groups_[static_cast<size_t>(rank / t)];
  }
  std::vector<Rank> ranks_;
  uint64_t arena_bytes_ = 0;
  std::atomic<int> next_capture_{0};  // ranks may capture at once, on their own threads
  std::chrono::steady_clock::time_point origin_;
  std::mutex profile_mutex_;
  std::atomic<bool> profiling_{false};
  std::vector<ProfileSpan> spans_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

const CpuGraph* captured_graph(Backend& backend, int rank, GraphHandle graph) {
  auto* cpu = dynamic_cast<CpuBackend*>(&backend);
  return cpu ? &cpu->graph(rank, graph) : nullptr;
}

uint64_t stream_workspace_bytes(Backend& backend, int rank, StreamKind stream) {
  auto* cpu = dynamic_cast<CpuBackend*>(&backend);
  return cpu ? cpu->workspace_bytes(rank, stream) : 0;
}

}  // namespace tr::cpu

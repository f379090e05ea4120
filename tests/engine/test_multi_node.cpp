// SPDX-License-Identifier: GPL-3.0-or-later
// The runtime's side of training across machines, without machines: two
// "nodes" are views of one CPU backend of two ranks, each exposing one local
// rank with its global rank, each trained by its own train() call on its own
// thread, as two processes would. They must train exactly like one process
// with two ranks (the data split and the dropout streams follow global ranks,
// the initial weights come from global rank 0), only node 0 writes
// checkpoints, and a stop asked for on one node stops both before the same
// step. Also: the plan compiled for every node's ranks, its fingerprint, and
// the refusal of CPU ranks across nodes.
#include <QtTest>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <thread>

#include <renaissance/error.h>
#include "net/multi_node.h"
#include "rank_runs.h"
#include "runtime/rank_barrier.h"

using namespace tr;
using rank_runs::same_bits;
using rank_runs::synthetic;

namespace {

// What the node views of one backend share: the backend, one arena
// allocation for all, and the vote behind any_process.
struct Cluster {
  Cluster(Backend& b, int n) : all(b), nodes(n), barrier(n) {}
  bool vote(int node, bool flag) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      any = any || flag;
    }
    barrier.arrive_and_wait();
    bool result = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      result = any;
    }
    barrier.arrive_and_wait();
    if (node == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      any = false;
    }
    barrier.arrive_and_wait();
    return result;
  }
  Backend& all;
  const int nodes;
  std::once_flag arenas;
  RankBarrier barrier;
  std::mutex mutex;
  bool any = false;
};

// One node's process as the runtime sees it: local ranks 0..per-1 that are
// ranks node*per.. of the shared backend.
class NodeView final : public Backend {
 public:
  NodeView(Cluster& c, int node) : c_(c), node_(node), per_(c.all.world_size() / c.nodes) {}

  std::string name() const override { return "node view of " + c_.all.name(); }
  int world_size() const override { return per_; }
  int global_world() const override { return c_.all.world_size(); }
  int global_rank(int local) const override { return node_ * per_ + local; }
  bool any_process(bool flag) override { return c_.vote(node_, flag); }

  void allocate_arenas(uint64_t bytes) override {
    std::call_once(c_.arenas, [&] { c_.all.allocate_arenas(bytes); });
  }
  uint8_t* arena(int r) override { return c_.all.arena(g(r)); }
  uint64_t arena_bytes() const override { return c_.all.arena_bytes(); }
  EventId create_event(int r) override { return c_.all.create_event(g(r)); }
  void record(int r, StreamKind s, EventId e) override { c_.all.record(g(r), s, e); }
  void wait(int r, StreamKind s, EventId e) override { c_.all.wait(g(r), s, e); }
  void synchronize(int r, StreamKind s) override { c_.all.synchronize(g(r), s); }
  void synchronize(int r) override { c_.all.synchronize(g(r)); }
  void synchronize_event(int r, EventId e) override { c_.all.synchronize_event(g(r), e); }
  void enqueue(int r, StreamKind s, Launch l) override { c_.all.enqueue(g(r), s, std::move(l)); }
  void begin_capture(int r, StreamKind s) override { c_.all.begin_capture(g(r), s); }
  GraphHandle end_capture(int r, StreamKind s) override { return c_.all.end_capture(g(r), s); }
  void abort_capture(int r) noexcept override { c_.all.abort_capture(g(r)); }
  void launch_graph(int r, StreamKind s, GraphHandle h) override {
    c_.all.launch_graph(g(r), s, h);
  }
  void all_reduce(int r, StreamKind s, ByteRange range, ReduceOp op) override {
    c_.all.all_reduce(g(r), s, range, op);
  }
  void broadcast(int r, StreamKind s, ByteRange range, int root) override {
    c_.all.broadcast(g(r), s, range, root);  // root is global already
  }
  void group_start(int r) override { c_.all.group_start(g(r)); }
  void group_end(int r) override { c_.all.group_end(g(r)); }
  void abort_collectives(const std::string& why) override { c_.all.abort_collectives(why); }
  void set_profiling(bool) override {}
  std::vector<ProfileSpan> take_profile() override { return {}; }

 private:
  int g(int local) const {
    if (local < 0 || local >= per_) throw std::out_of_range("node view: no local rank");
    return global_rank(local);
  }
  Cluster& c_;
  const int node_, per_;
};

struct NodeRun {
  TrainReport report;
  std::vector<double> losses;
  std::vector<float> weights;  // local rank 0's at the last step
};

// Trains `p` (whose device list is one node's) on `nodes` node views of one
// CPU backend, each node on its own thread; options[n] are node n's.
std::vector<NodeRun> train_nodes(const Project& p, int nodes, std::vector<TrainOptions> options,
                                 std::vector<std::atomic<bool>>* stops = nullptr,
                                 int64_t stop_after = -1) {
  MultiNodeOptions mn;
  mn.nodes = nodes;
  mn.rendezvous = "127.0.0.1:1";
  const CompiledProject cp = compile_for_nodes(p, {}, mn);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  auto all = cpu::make_cpu_backend({cp.world_size, true});
  Cluster cluster(*all, nodes);
  std::vector<NodeRun> runs(static_cast<size_t>(nodes));
  std::vector<std::unique_ptr<NodeView>> views;
  for (int n = 0; n < nodes; ++n) views.push_back(std::make_unique<NodeView>(cluster, n));
  std::mutex errors_mutex;
  std::string errors;
  std::vector<std::thread> threads;
  for (int n = 0; n < nodes; ++n)
    threads.emplace_back([&, n] {
      NodeRun& r = runs[static_cast<size_t>(n)];
      TrainCallbacks cb;
      cb.on_step = [&, n](const StepReport& s) {
        r.losses.push_back(s.loss);
        // This node's stop request, after the given step (the other node's stays off).
        if (stops && n == 1 && s.step == stop_after) (*stops)[1] = true;
      };
      cb.on_rank_step = [&](int rank, const StepReport&, TrainingSession& session) {
        if (rank == 0) r.weights = rank_runs::weights(session, 0);
      };
      try {
        r.report =
            train(cp, *views[static_cast<size_t>(n)], *data, options[static_cast<size_t>(n)], cb);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors += "node " + std::to_string(n) + ": " + e.what() + "\n";
        // The other node may wait for this one: release it.
        all->abort_collectives(e.what());
        cluster.barrier.abort(e.what());
      }
    });
  auto joined = std::async(std::launch::async, [&] {
    for (std::thread& t : threads) t.join();
  });
  if (joined.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    qFatal("the nodes did not finish in 120 s: they disagree on a collective");
  if (!errors.empty()) qFatal("%s", errors.c_str());
  return runs;
}

Project one_node_of(Project p) {
  p.training.devices.ids = {0};
  return p;
}

}  // namespace

class TestMultiNode : public QObject {
  Q_OBJECT

 private slots:
  void compiles_for_every_node() {
    Project p = synthetic(2, false);
    MultiNodeOptions mn;
    mn.nodes = 2;
    const CompiledProject cp = compile_for_nodes(p, {}, mn);
    QCOMPARE(cp.world_size, 4);
    QCOMPARE(cp.project.training.devices.world_size(), 2);  // this node's
    QCOMPARE(cp.variants.front().batch, int64_t{8});        // 32 over 4 ranks
    p.training.global_batch = 34;
    try {
      compile_for_nodes(p, {}, mn);
      QFAIL("34 split over 4 ranks");
    } catch (const UsageError& e) {
      QVERIFY2(std::string(e.what()).find("global_batch 34 must be divisible by the 4 ranks of 2 "
                                          "nodes x cpu:2") != std::string::npos,
               e.what());
    }
  }

  void fingerprint_ignores_device_ids_only() {
    Project a = synthetic(2, false);
    a.training.devices.kind = DeviceKind::CUDA;
    Project b = a;
    b.training.devices.ids = {2, 3};  // the other machine's devices
    MultiNodeOptions mn;
    mn.nodes = 2;
    const std::string fa = plan_fingerprint(compile_for_nodes(a, {}, mn));
    QCOMPARE(fa.size(), size_t{16});
    QCOMPARE(plan_fingerprint(compile_for_nodes(b, {}, mn)), fa);
    Project c = a;
    c.training.optimizer.lr = 0.1;
    QVERIFY(plan_fingerprint(compile_for_nodes(c, {}, mn)) != fa);
    Project d = a;
    d.training.devices.ids = {0};  // fewer devices: another split of the batch
    QVERIFY(plan_fingerprint(compile_for_nodes(d, {}, mn)) != fa);
    // The same world on one node of four devices is not the same plan either.
    Project e = a;
    e.training.devices.ids = {0, 1, 2, 3};
    QVERIFY(plan_fingerprint(compile_for_nodes(e, {}, MultiNodeOptions{})) != fa);
  }

  void checks_the_node_options() {
    MultiNodeOptions mn;
    mn.nodes = 2;
    mn.node_rank = 1;
    mn.rendezvous = "10.0.0.1:29500";
    check_multi_node(mn);  // fine, for CPU (Gloo) and CUDA (NCCL) devices alike
    mn.rendezvous.clear();
    QVERIFY_THROWS_EXCEPTION(UsageError, check_multi_node(mn));
    mn.rendezvous = "10.0.0.1";
    QVERIFY_THROWS_EXCEPTION(UsageError, check_multi_node(mn));
    mn.rendezvous = "10.0.0.1:29500";
    mn.node_rank = 2;
    QVERIFY_THROWS_EXCEPTION(UsageError, check_multi_node(mn));
    check_multi_node(MultiNodeOptions{});  // one node: anything goes
  }

  // Dropout makes every rank's random stream depend on its rank: only global
  // ranks reproduce the single-process run.
  void two_nodes_train_like_two_ranks() {
    const Project p = synthetic(2, false, true);
    const rank_runs::Run reference = rank_runs::run(p);
    const std::vector<NodeRun> nodes = train_nodes(one_node_of(p), 2, {{}, {}});
    for (int n = 0; n < 2; ++n) {
      const NodeRun& r = nodes[static_cast<size_t>(n)];
      QCOMPARE(r.report.steps, reference.report.steps);
      QCOMPARE(r.losses.size(), reference.losses.size());
      for (size_t i = 0; i < r.losses.size(); ++i)
        QVERIFY2(r.losses[i] == reference.losses[i],
                 qPrintable(QString("node %1, step %2: loss %3, one process %4")
                                .arg(n)
                                .arg(i)
                                .arg(r.losses[i])
                                .arg(reference.losses[i])));
      QVERIFY(same_bits(r.weights, reference.weights.at(reference.report.steps - 1)[0]));
      QCOMPARE(r.report.epochs.size(), size_t{1});
      QVERIFY(r.report.epochs[0].validated);
      QCOMPARE(r.report.epochs[0].val_loss, reference.report.epochs[0].val_loss);
      QCOMPARE(r.report.epochs[0].images_per_s > 0, true);
    }
  }

  void only_node_0_writes_checkpoints() {
    const QString dir = QDir::tempPath() + "/tr_multi_node_ckpt";
    QDir(dir).removeRecursively();
    TrainOptions o;
    o.checkpoint_dir = dir.toStdString();
    o.validate = false;
    const std::vector<NodeRun> nodes = train_nodes(one_node_of(synthetic(2, false)), 2, {o, o});
    QCOMPARE(nodes[0].report.checkpoints.size(), size_t{1});
    QVERIFY(nodes[1].report.checkpoints.empty());
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(o.checkpoint_dir)) {
      (void)e;
      ++files;
    }
    QCOMPARE(files, 1);
    QDir(dir).removeRecursively();
  }

  // Node 1 is asked to stop after step 2; node 0 is not: both stop before step 3.
  void a_stop_on_one_node_stops_all() {
    std::vector<std::atomic<bool>> stops(2);
    std::vector<TrainOptions> o(2);
    for (int n = 0; n < 2; ++n) o[static_cast<size_t>(n)].stop = &stops[static_cast<size_t>(n)];
    const std::vector<NodeRun> nodes =
        train_nodes(one_node_of(synthetic(2, false)), 2, o, &stops, 2);
    for (const NodeRun& r : nodes) {
      QVERIFY(r.report.stopped);
      QCOMPARE(r.report.steps, int64_t{3});
    }
  }
};

QTEST_APPLESS_MAIN(TestMultiNode)
#include "test_multi_node.moc"

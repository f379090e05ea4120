// SPDX-License-Identifier: GPL-3.0-or-later
// Data-parallel training on CPU ranks: with the same global batch a BN-free
// model ends with the same weights on 1, 2 and 4 ranks and every rank holds
// identical weights; with BN every rank's running statistics are identical
// after every step, and SyncBatchNorm trains like one rank; Adam, LARS and EMA train on 1 and 2
// ranks; validation on the EMA weights; one failing rank stops every rank with its error instead of
// a deadlock; a stop request stops all ranks before the same step; the profile holds every rank's
// five lanes; DEEP_COMM never waits for the first-layer backward, so it can run under it.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include <renaissance/error.h>
#include <renaissance/profile_export.h>
#include "data/epoch_plan.h"
#include "forwarding_backend.h"
#include "rank_runs.h"
#include "runtime/graph_resolver.h"

using namespace tr;
using rank_runs::relative_difference;
using rank_runs::run;
using rank_runs::same_bits;
using rank_runs::synthetic;

namespace {

// A DataSource that cannot read one training sample.
class BrokenSample final : public DataSource {
 public:
  BrokenSample(const DataSource& inner, int64_t bad) : inner_(inner), bad_(bad) {}
  Shape sample_shape() const override { return inner_.sample_shape(); }
  int64_t classes() const override { return inner_.classes(); }
  int64_t size(Split s) const override { return inner_.size(s); }
  void read(Split s, int64_t index, uint8_t* out) const override {
    if (s == Split::Train && index == bad_)
      throw UsageError("training sample " + std::to_string(index) + " is unreadable");
    inner_.read(s, index, out);
  }
  int32_t label(Split s, int64_t index) const override { return inner_.label(s, index); }
  std::string describe() const override { return "broken " + inner_.describe(); }

 private:
  const DataSource& inner_;
  int64_t bad_;
};

void expect_identical_ranks(const rank_runs::Run& r, bool stats) {
  QVERIFY(!r.weights.empty());
  for (const auto* per_step : {&r.weights, stats ? &r.stats : nullptr}) {
    if (!per_step) continue;
    for (const auto& [step, ranks] : *per_step)
      for (size_t k = 1; k < ranks.size(); ++k)
        QVERIFY2(same_bits(ranks[k], ranks[0]),
                 qPrintable(QString("step %1: rank %2 differs from rank 0").arg(step).arg(k)));
  }
}

// Holds each rank's COMP_1 before its first-layer backward until that rank's
// DEEP_COMM has finished on UPDATE. A schedule in which the all-reduce waits
// for the first-layer backward would then stall: the hold gives up after
// kHold and counts it. Graphs are told apart by the tags of the launches each
// capture recorded.
class HoldFirstLayerBackward final : public ForwardingBackend {
 public:
  static constexpr std::chrono::seconds kHold{10};
  explicit HoldFirstLayerBackward(std::unique_ptr<Backend> inner)
      : ForwardingBackend(std::move(inner)) {}

  void begin_capture(int r, StreamKind s) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      capturing_[r].clear();
    }
    ForwardingBackend::begin_capture(r, s);
  }
  void enqueue(int r, StreamKind s, Launch l) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (capturing_.count(r) && l.tag.graph != GraphId::NUM_GRAPH_IDS)
        capturing_[r].insert(l.tag.graph);
    }
    ForwardingBackend::enqueue(r, s, std::move(l));
  }
  GraphHandle end_capture(int r, StreamKind s) override {
    const GraphHandle h = ForwardingBackend::end_capture(r, s);
    std::lock_guard<std::mutex> lock(mutex_);
    if (capturing_[r].size() == 1) graph_of_[{r, h}] = *capturing_[r].begin();
    capturing_.erase(r);
    return h;
  }
  void launch_graph(int r, StreamKind s, GraphHandle h) override {
    GraphId g = GraphId::NUM_GRAPH_IDS;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = graph_of_.find({r, h}); it != graph_of_.end()) g = it->second;
    }
    if (g == GraphId::FIRST_LAYER_BWD_A || g == GraphId::FIRST_LAYER_BWD_B) {
      int64_t want = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        want = ++held_[r];
      }
      host_func(r, s, [this, r, want] {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!done_.wait_for(lock, kHold, [&] { return comms_[r] >= want; })) ++stalls_;
      });
    }
    ForwardingBackend::launch_graph(r, s, h);
    if (g == GraphId::DEEP_COMM)
      host_func(r, s, [this, r] {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          ++comms_[r];
        }
        done_.notify_all();
      });
  }

  int64_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t n = 0;
    for (const auto& [rank, count] : held_) n += count;
    return n;
  }
  int64_t comms() {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t n = 0;
    for (const auto& [rank, count] : comms_) n += count;
    return n;
  }
  int64_t stalls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stalls_;
  }

 private:
  void host_func(int r, StreamKind s, std::function<void()> f) {
    Launch l;
    l.kind = LaunchKind::HOST_FUNC;
    l.tag.stream = s;
    l.tag.label = "test hold";
    l.host_func = std::move(f);
    ForwardingBackend::enqueue(r, s, std::move(l));
  }

  std::mutex mutex_;
  std::condition_variable done_;
  std::map<int, std::set<GraphId>> capturing_;
  std::map<std::pair<int, GraphHandle>, GraphId> graph_of_;
  std::map<int, int64_t> held_, comms_;  // per rank
  int64_t stalls_ = 0;
};

// One launch the profiler saw: on `rank` from `a` to `b` us, in `graph`.
ProfileSpan profile_span(int rank, double a, double b, GraphId graph, bool collective) {
  ProfileSpan s;
  s.rank = rank;
  s.tag.graph = graph;
  s.tag.collective = collective;
  s.start_us = a;
  s.end_us = b;
  return s;
}

}  // namespace

// Counts, per rank, the steps the host has enqueued (their scalars copy)
// against the results it has waited for: how far ahead of the device it ran.
class StepsAhead : public ForwardingBackend {
 public:
  explicit StepsAhead(std::unique_ptr<Backend> inner)
      : ForwardingBackend(std::move(inner)), counts_(static_cast<size_t>(world_size())) {}

  void enqueue(int r, StreamKind s, Launch l) override {
    if (l.kind == LaunchKind::COPY_H2D && l.tag.label == "scalars H2D") {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counts_[static_cast<size_t>(r)].enqueued;
    }
    ForwardingBackend::enqueue(r, s, std::move(l));
  }
  void synchronize_event(int r, EventId e) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Count& c = counts_[static_cast<size_t>(r)];
      most_ahead_ = std::max(most_ahead_, c.enqueued - c.waited);
      // A validation's result follows the steps it waited for: no step's.
      c.waited = std::min(c.waited + 1, c.enqueued);
    }
    ForwardingBackend::synchronize_event(r, e);
  }
  int most_ahead() const { return most_ahead_; }

 private:
  struct Count {
    int enqueued = 0, waited = 0;
  };
  std::mutex mutex_;
  std::vector<Count> counts_;
  int most_ahead_ = 0;
};

class TestDataParallel : public QObject {
  Q_OBJECT

 private slots:
  void sameWeightsOnOneTwoAndFourRanks() {
    const rank_runs::Run one = run(synthetic(1, false));
    QCOMPARE(one.report.steps, int64_t{9});  // 8 full batches and the partial one
    const std::vector<float>& reference = one.weights.at(8)[0];
    QVERIFY(!reference.empty());
    for (int world : {2, 4}) {
      const rank_runs::Run r = run(synthetic(world, false));
      QCOMPARE(r.report.steps, int64_t{9});
      expect_identical_ranks(r, false);
      const double d = relative_difference(r.weights.at(8)[0], reference);
      QVERIFY2(d < 1e-5, qPrintable(QString("%1 ranks: relative difference %2").arg(world).arg(d)));
      QVERIFY(!same_bits(r.weights.at(8)[0], one.weights.at(0)[0]));  // it did train
      for (size_t i = 0; i < r.losses.size(); ++i)
        QVERIFY2(std::fabs(r.losses[i] - one.losses[i]) <= 1e-5 * std::fabs(one.losses[i]),
                 qPrintable(QString("%1 ranks, step %2: loss %3 vs %4")
                                .arg(world)
                                .arg(i)
                                .arg(r.losses[i], 0, 'g', 9)
                                .arg(one.losses[i], 0, 'g', 9)));
      // Validation metrics are all-reduced: the same figures as on one rank.
      QVERIFY(std::fabs(r.report.epochs[0].val_loss - one.report.epochs[0].val_loss) < 1e-4);
    }
  }

  void communicationGraphsAreSharedByEveryVariant() {
    struct Expected {
      GraphId id;
      RangeOp op;
      RegionSpan span;
    };
    const Expected expected[] = {
        {GraphId::DEEP_COMM, RangeOp::ALLREDUCE_MEAN, {Region::G_DEEP_CONV, Region::R_RESULT}},
        {GraphId::FIRST_COMM, RangeOp::ALLREDUCE_MEAN, {Region::G_BN_BIAS, Region::G_FIRST_CONV}},
        {GraphId::STATS_COMM, RangeOp::ALLREDUCE_MEAN, {Region::B_NEXT_MEAN, Region::B_NEXT_VAR}},
        {GraphId::VAL_RESULT_COMM,
         RangeOp::ALLREDUCE_SUM,
         {Region::R_RESULT_ACCUMULATED, Region::R_RESULT_ACCUMULATED}}};
    const CompiledProject cp = compile_project(synthetic(2, true));
    for (const Expected& e : expected) {
      int found = 0;
      for (const ComputationGraph& g : cp.graphs) {
        if (g.id != e.id) continue;
        ++found;
        QVERIFY2(g.variant < 0 && g.shape_invariant, graph_id_name(e.id).data());
        QCOMPARE(g.stream, StreamKind::UPDATE);
        QCOMPARE(g.nodes.size(), size_t{1});
        QCOMPARE(g.nodes[0].range_op, e.op);
        QCOMPARE(g.nodes[0].in_spans.size(), size_t{1});
        const RegionSpan& span = g.nodes[0].in_spans[0];
        // Validation may all-reduce more per-class results after the metrics.
        QVERIFY2(span.first == e.span.first &&
                     (span.last == e.span.last || e.id == GraphId::VAL_RESULT_COMM),
                 graph_id_name(e.id).data());
      }
      QVERIFY2(found == 1, graph_id_name(e.id).data());
    }
    // One rank has nothing to communicate.
    for (const ComputationGraph& g : compile_project(synthetic(1, true)).graphs)
      QVERIFY(g.id != GraphId::DEEP_COMM && g.id != GraphId::FIRST_COMM &&
              g.id != GraphId::STATS_COMM && g.id != GraphId::VAL_RESULT_COMM);
  }

  void batchNormStatisticsAgreeAfterEveryStep() {
    for (int world : {2, 4}) {
      const rank_runs::Run r = run(synthetic(world, true));
      expect_identical_ranks(r, true);
      // The statistics moved away from their start (mean 0, variance 1).
      const std::vector<float>& last = r.stats.rbegin()->second[0];
      QVERIFY(
          std::any_of(last.begin(), last.end(), [](float v) { return v != 0.0f && v != 1.0f; }));
    }
  }

  // The trainer enqueues step s + 1 before it waits for step s's result. On
  // four ranks with synchronised batch norm, dropout and LARS (whose update
  // runs on three streams) that gives, bit for bit, the losses and
  // validation figures of steps finished one by one (an on_rank_step
  // callback asks for that), and the CPU backend's schedule checker finds
  // no pair of launches of two steps in flight left unordered.
  void pipelinedStepsTrainAsStepsFinishedOneByOne() {
    Project p = synthetic(4, true, true);
    p.training.sync_batch_norm = true;
    p.training.epochs = 2;
    p.training.optimizer.kind = OptimizerKind::LARS;
    p.training.optimizer.lr = 2.0;
    const rank_runs::Run one_by_one = run(p);
    const CompiledProject cp = compile_project(p);
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    StepsAhead backend(cpu::make_cpu_backend({cp.world_size, true}));
    std::vector<double> losses;
    TrainCallbacks cb;
    cb.on_step = [&](const StepReport& s) { losses.push_back(s.loss); };
    const TrainReport pipelined = train(cp, backend, *data, {}, cb);
    QCOMPARE(backend.most_ahead(), 2);
    QCOMPARE(losses.size(), one_by_one.losses.size());
    for (size_t i = 0; i < losses.size(); ++i)
      QVERIFY2(std::memcmp(&losses[i], &one_by_one.losses[i], sizeof(double)) == 0,
               qPrintable(QString("step %1: %2 against %3")
                              .arg(i)
                              .arg(losses[i], 0, 'g', 17)
                              .arg(one_by_one.losses[i], 0, 'g', 17)));
    QCOMPARE(pipelined.epochs.size(), size_t{2});
    for (size_t e = 0; e < 2; ++e) {
      const EpochReport& a = pipelined.epochs[e];
      const EpochReport& b = one_by_one.report.epochs[e];
      QCOMPARE(a.train_loss, b.train_loss);
      QCOMPARE(a.val_loss, b.val_loss);
      QCOMPARE(a.val_top1, b.val_top1);
    }
  }

  void syncBatchNormTrainsLikeOneRank() {
    const rank_runs::Run one = run(synthetic(1, true));
    const std::vector<float>& reference = one.weights.rbegin()->second[0];
    for (int world : {2, 4}) {
      Project p = synthetic(world, true);
      const rank_runs::Run per_rank = run(p);
      p.training.sync_batch_norm = true;
      const CompiledProject cp = compile_project(p);
      for (const ComputationGraph& g : cp.graphs) QVERIFY(g.id != GraphId::STATS_COMM);
      const rank_runs::Run synced = run(p);
      expect_identical_ranks(synced, true);
      QCOMPARE(synced.report.steps, one.report.steps);
      // The global batch's statistics: one rank's training up to float
      // rounding, where per-rank statistics train a different model.
      const double d_sync = relative_difference(synced.weights.rbegin()->second[0], reference);
      const double d_rank = relative_difference(per_rank.weights.rbegin()->second[0], reference);
      QVERIFY2(d_sync < 1e-4, qPrintable(QString("%1 ranks: %2").arg(world).arg(d_sync)));
      QVERIFY2(d_rank > 10 * d_sync,
               qPrintable(
                   QString("%1 ranks: per-rank %2, synced %3").arg(world).arg(d_rank).arg(d_sync)));
      QCOMPARE(synced.stats.rbegin()->second[0].size(), one.stats.rbegin()->second[0].size());
      QVERIFY(relative_difference(synced.stats.rbegin()->second[0], one.stats.rbegin()->second[0]) <
              1e-4);
    }
  }

  void optimizersTrainOnOneAndTwoRanks_data() {
    QTest::addColumn<int>("optimizer");
    QTest::addColumn<int>("world");
    for (int world : {1, 2}) {
      QTest::addRow("adam cpu:%d", world) << static_cast<int>(OptimizerKind::Adam) << world;
      QTest::addRow("lars cpu:%d", world) << static_cast<int>(OptimizerKind::LARS) << world;
      QTest::addRow("sgd+ema cpu:%d", world) << static_cast<int>(OptimizerKind::SGD) << world;
    }
  }
  void optimizersTrainOnOneAndTwoRanks() {
    QFETCH(int, optimizer);
    QFETCH(int, world);
    Project p = synthetic(world, true);
    p.training.epochs = 2;
    p.training.optimizer.kind = static_cast<OptimizerKind>(optimizer);
    TrainOptions o;
    switch (p.training.optimizer.kind) {
      case OptimizerKind::Adam:
        p.training.optimizer.lr = 0.01;
        break;
      case OptimizerKind::LARS:
        p.training.optimizer.lr = 2.0;
        break;
      case OptimizerKind::SGD:
        p.training.ema = true;
        p.training.ema_decay = 0.9;
        o.eval_ema = true;
        break;
    }
    const rank_runs::Run r = run(p, o);
    QCOMPARE(r.report.epochs.size(), size_t{2});
    expect_identical_ranks(r, true);
    const EpochReport& last = r.report.epochs.back();
    QVERIFY2(last.train_loss < 0.5 * r.losses.front(),
             qPrintable(QString("loss %1 -> %2").arg(r.losses.front()).arg(last.train_loss)));
    QVERIFY2(last.val_top1 > 0.8, qPrintable(QString::number(last.val_top1)));
  }

  void validationOnTheEmaWeights() {
    Project p = synthetic(2, true);
    p.training.epochs = 2;
    p.training.ema = true;
    p.training.ema_decay = 0.999;  // E stays close to the initial weights
    const rank_runs::Run on_w = run(p);
    TrainOptions ema;
    ema.eval_ema = true;
    const rank_runs::Run on_e = run(p, ema);
    // Training is untouched: W goes back exactly after each validation.
    QCOMPARE(on_e.losses, on_w.losses);
    QVERIFY(same_bits(on_e.weights.rbegin()->second[0], on_w.weights.rbegin()->second[0]));
    const EpochReport& w = on_w.report.epochs.back();
    const EpochReport& e = on_e.report.epochs.back();
    QVERIFY2(e.val_loss > w.val_loss + 0.1,
             qPrintable(QString("EMA %1, weights %2").arg(e.val_loss).arg(w.val_loss)));
    // An EMA that forgets at once is the weights themselves.
    p.training.ema_decay = 1e-9;
    const rank_runs::Run instant = run(p, ema);
    QVERIFY(std::fabs(instant.report.epochs.back().val_loss - w.val_loss) <= 1e-5 * w.val_loss);
    // Without an EMA there is nothing to validate on.
    p.training.ema = false;
    QVERIFY_THROWS_EXCEPTION(UsageError, run(p, ema));
  }

  void oneFailingRankStopsEveryRank() {
    const Project p = synthetic(2, false);
    const auto data = load_dataset(p.dataset, "", p.training.seed);
    // A sample only rank 1 reads, in batch 3 of the first epoch.
    const EpochPlan plan(p.dataset.train_size, p.training.global_batch, 2, 1, false, true,
                         p.training.seed, 0);
    const int64_t bad = plan.sample(3, 0);
    const BrokenSample broken(*data, bad);
    try {
      run(p, {}, &broken);
      QFAIL("training went on past an unreadable sample");
    } catch (const UsageError& e) {
      QVERIFY2(QString(e.what()).contains("training sample " + QString::number(bad)), e.what());
    }
  }

  void stopRequestStopsEveryRankBeforeTheSameStep() {
    std::atomic<bool> stop{false};
    TrainOptions o;
    o.stop = &stop;
    Project p = synthetic(4, true);
    p.training.epochs = 3;
    const CompiledProject cp = compile_project(p);
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    auto backend = cpu::make_cpu_backend({4, true});
    TrainCallbacks cb;
    cb.on_step = [&](const StepReport& s) {
      if (s.step == 2) stop = true;
    };
    std::mutex mutex;
    std::map<int, int64_t> last_step;
    cb.on_rank_step = [&](int rank, const StepReport& s, TrainingSession&) {
      std::lock_guard<std::mutex> lock(mutex);
      last_step[rank] = s.step;
    };
    const TrainReport report = train(cp, *backend, *data, o, cb);
    QVERIFY(report.stopped);
    QVERIFY2(report.steps >= 3 && report.steps <= 4, qPrintable(QString::number(report.steps)));
    QCOMPARE(last_step.size(), size_t{4});
    for (const auto& [rank, step] : last_step) QCOMPARE(step, report.steps - 1);
  }

  void profileHoldsEveryRanksLanesAndTheCommOverlap() {
    Project p = synthetic(2, true);
    // A first layer with real work, so that its backward takes a while.
    p.dataset.height = p.dataset.width = 16;
    p.dataset.channels = 3;
    p.dataset.mean = {0.5, 0.5, 0.5};
    p.dataset.std = {0.25, 0.25, 0.25};
    p.model.nodes[0].params = input(16, 16, 3);
    p.model.nodes[1].params = conv(32, 3, 3, 1, 1, 1, 1, true);
    TrainOptions o;
    o.validate = false;
    o.profile_begin = 1;
    o.profile_end = 6;
    const rank_runs::Run r = run(p, o);
    std::map<int, std::set<StreamKind>> lanes;
    for (const ProfileSpan& s : r.report.profile) lanes[s.rank].insert(s.tag.stream);
    QCOMPARE(lanes.size(), size_t{2});
    for (const auto& [rank, streams] : lanes)
      QVERIFY2(streams.size() == size_t{kNumStreams},
               qPrintable(QString("rank %1 has %2 lanes").arg(rank).arg(streams.size())));
    const std::string trace = chrome_trace_json(r.report.profile);
    QVERIFY(trace.find("\"rank 1\"") != std::string::npos);
    const std::vector<GraphOverlap> comm = comm_overlaps(r.report.profile);
    QCOMPARE(comm.size(), size_t{2});
    double overlap = 0;
    for (const GraphOverlap& g : comm) {
      QVERIFY(g.busy_a_us > 0 && g.busy_b_us > 0);
      QVERIFY(g.overlap_us <= std::min(g.busy_a_us, g.busy_b_us) + 1e-6);
      overlap += g.overlap_us;
    }
    // Whether they ran at the same time here is up to the OS's scheduler
    // (deepCommDoesNotWaitForTheFirstLayerBackward shows that they may).
    qInfo("DEEP_COMM under FIRST_LAYER_BWD: %.0f us over five steps on two ranks", overlap);
  }

  // The deep bucket's all-reduce waits only for the deep backward, never for
  // the first layer's: with every rank's first-layer backward held back until
  // its DEEP_COMM has finished, training goes through without a stall.
  void deepCommDoesNotWaitForTheFirstLayerBackward() {
    Project p = synthetic(2, true);
    p.training.epochs = 1;
    const CompiledProject cp = compile_project(p);
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    HoldFirstLayerBackward backend(cpu::make_cpu_backend({cp.world_size, true}));
    TrainOptions o;
    o.validate = false;
    auto done = std::async(std::launch::async, [&] { return train(cp, backend, *data, o, {}); });
    // A stalled schedule costs kHold per step; a broken one must fail, not hang.
    QVERIFY2(done.wait_for(std::chrono::seconds(240)) == std::future_status::ready,
             "training with the first-layer backward held did not finish in 240 s");
    const TrainReport report = done.get();
    QCOMPARE(report.steps, int64_t{9});  // 272 samples in batches of 32
    QCOMPARE(backend.held(), 2 * report.steps);
    QCOMPARE(backend.comms(), 2 * report.steps);
    QVERIFY2(backend.stalls() == 0,
             qPrintable(QString("DEEP_COMM waited for FIRST_LAYER_BWD in %1 of %2 rank steps")
                            .arg(backend.stalls())
                            .arg(2 * report.steps)));
  }

  void graphOverlapArithmetic() {
    auto span = [](int rank, GraphId g, double a, double b) {
      return profile_span(rank, a, b, g, false);
    };
    const std::vector<ProfileSpan> spans = {
        span(0, GraphId::DEEP_COMM, 10, 30),         span(0, GraphId::DEEP_COMM, 25, 40),
        span(0, GraphId::FIRST_LAYER_BWD_A, 0, 15),  span(0, GraphId::FIRST_LAYER_BWD_B, 35, 50),
        span(0, GraphId::OPTIMIZER, 0, 100),         span(1, GraphId::DEEP_COMM, 0, 10),
        span(1, GraphId::FIRST_LAYER_BWD_A, 20, 30), span(2, GraphId::DEEP_COMM, 0, 10)};
    const std::vector<GraphOverlap> o = comm_overlaps(spans);
    QCOMPARE(o.size(), size_t{2});  // rank 2 ran no first-layer backward
    QCOMPARE(o[0].rank, 0);
    QCOMPARE(o[0].busy_a_us, 30.0);   // [10, 40]
    QCOMPARE(o[0].busy_b_us, 30.0);   // [0, 15] and [35, 50]
    QCOMPARE(o[0].overlap_us, 10.0);  // [10, 15] and [35, 40]
    QCOMPARE(o[1].overlap_us, 0.0);
    QCOMPARE(o[0].fraction_of_a(), 1.0 / 3.0);
  }

  // The communication hidden under compute: collectives (any graph's)
  // against every other launch of the same rank.
  void hiddenCommunicationArithmetic() {
    auto span = [](int rank, bool collective, double a, double b) {
      return profile_span(rank, a, b, GraphId::NUM_GRAPH_IDS, collective);
    };
    const std::vector<ProfileSpan> spans = {span(0, true, 10, 30), span(0, true, 25, 40),
                                            span(0, false, 0, 15), span(0, false, 35, 50),
                                            span(1, false, 0, 10), span(2, true, 0, 10)};
    const std::vector<GraphOverlap> o = hidden_communication(spans);
    QCOMPARE(o.size(), size_t{2});  // rank 1 ran no collective
    QCOMPARE(o[0].rank, 0);
    QCOMPARE(o[0].busy_a_us, 30.0);
    QCOMPARE(o[0].busy_b_us, 30.0);
    QCOMPARE(o[0].overlap_us, 10.0);
    QCOMPARE(o[1].rank, 2);
    QCOMPARE(o[1].overlap_us, 0.0);
    // A collective launch says it is one.
    const CompiledProject cp = compile_project(synthetic(2, false));
    const ComputationGraph* comm = cp.find_graph(GraphId::DEEP_COMM, 0);
    QVERIFY(comm);
    std::vector<uint8_t> arena(cp.bytes_per_device());
    const ResolvedGraph rg = resolve_graph(cp, *comm, 0, arena.data(), 0, cp.world_size);
    QVERIFY(node_launches(cp, rg, 0, {}).front().tag.collective);
  }
};

QTEST_APPLESS_MAIN(TestDataParallel)
#include "test_data_parallel.moc"

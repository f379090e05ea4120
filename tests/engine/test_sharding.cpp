// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-1 and ZeRO-2 (training.sharding "optimizer" and
// "optimizer+gradients") on CPU ranks: each rank holds its share of the
// momentum and Adam's moments (and under ZeRO-2 of the summed gradients,
// the full ones living in the step-local pool until their bucket's
// reduce-scatter), updates its share of the weights and gathers the rest.
// Training is the unsharded run's bit for bit (SGD, Adam, LARS, EMA; FP32,
// AMP and BF16; 2 and 4 ranks; ZeRO-2's LARS to rounding, as its norms add
// the ranks' squared sums), checkpoints hold the same tensors and resume on
// another rank count, sharded or not, the plan holds a quarter of the
// moments (and gradients) on 4 ranks and says how each tensor lies, and
// sharding one rank is refused.
#include <QtTest>

#include <map>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include "compile/lifetimes.h"
#include "plan/gradient_buckets.h"
#include "rank_runs.h"

using namespace tr;
using rank_runs::run;
using rank_runs::same_bits;
using rank_runs::synthetic;

namespace {

using Tensors = std::map<std::pair<std::string, std::string>, std::vector<float>>;

Tensors tensors_of(const std::string& path) {
  Tensors out;
  for (const CheckpointTensor& t : read_checkpoint(path).tensors)
    out[{t.region, t.name}] = t.values;
  return out;
}

std::string only_file(const QTemporaryDir& dir) {
  const QStringList files = QDir(dir.path()).entryList({"*.ckpt"}, QDir::Files, QDir::Name);
  return files.isEmpty() ? std::string() : dir.filePath(files.back()).toStdString();
}

Project with_optimizer(Project p, OptimizerKind kind) {
  p.training.optimizer.kind = kind;
  if (kind == OptimizerKind::Adam) p.training.optimizer.lr = 0.01;
  if (kind == OptimizerKind::LARS) p.training.optimizer.lr = 2.0;
  if (kind == OptimizerKind::SGD) {
    p.training.ema = true;
    p.training.ema_decay = 0.9;
  }
  return p;
}

uint64_t series_bytes(const MemoryPlan& plan, ParamSeries s) {
  return plan
      .region_range(param_region(s, ParamKind::BN_BIAS), param_region(s, ParamKind::DEEP_CONV))
      .bytes;
}

}  // namespace

class TestSharding : public QObject {
  Q_OBJECT

 private slots:
  void trainsBitForBitAsUnsharded_data() {
    QTest::addColumn<int>("optimizer");
    QTest::addColumn<int>("world");
    QTest::addColumn<int>("sharding");
    QTest::addColumn<int>("precision");
    const int fp32 = static_cast<int>(Precision::FP32);
    const int one = static_cast<int>(Sharding::Optimizer);
    const int two = static_cast<int>(Sharding::OptimizerAndGradients);
    for (int world : {2, 4}) {
      QTest::addRow("sgd+ema cpu:%d", world)
          << static_cast<int>(OptimizerKind::SGD) << world << one << fp32;
      QTest::addRow("adam cpu:%d", world)
          << static_cast<int>(OptimizerKind::Adam) << world << one << fp32;
      QTest::addRow("lars cpu:%d", world)
          << static_cast<int>(OptimizerKind::LARS) << world << one << fp32;
      QTest::addRow("zero-2 sgd+ema cpu:%d", world)
          << static_cast<int>(OptimizerKind::SGD) << world << two << fp32;
      QTest::addRow("zero-2 adam cpu:%d", world)
          << static_cast<int>(OptimizerKind::Adam) << world << two << fp32;
    }
    QTest::addRow("zero-2 sgd+ema amp cpu:2")
        << static_cast<int>(OptimizerKind::SGD) << 2 << two << static_cast<int>(Precision::AMP);
    QTest::addRow("zero-2 adam bf16 cpu:4")
        << static_cast<int>(OptimizerKind::Adam) << 4 << two << static_cast<int>(Precision::BF16);
  }
  void trainsBitForBitAsUnsharded() {
    QFETCH(int, optimizer);
    QFETCH(int, world);
    QFETCH(int, sharding);
    QFETCH(int, precision);
    Project plain = with_optimizer(synthetic(world, true), static_cast<OptimizerKind>(optimizer));
    plain.training.precision = static_cast<Precision>(precision);
    Project sharded = plain;
    sharded.training.sharding = static_cast<Sharding>(sharding);
    QTemporaryDir a, b;
    TrainOptions oa, ob;
    oa.checkpoint_dir = a.path().toStdString();
    ob.checkpoint_dir = b.path().toStdString();
    const rank_runs::Run ra = run(plain, oa), rb = run(sharded, ob);
    QCOMPARE(rb.losses.size(), ra.losses.size());
    for (size_t i = 0; i < ra.losses.size(); ++i) QCOMPARE(rb.losses[i], ra.losses[i]);
    // After every step every rank holds all the weights, the unsharded run's.
    for (const auto& [step, ranks] : rb.weights)
      for (size_t r = 0; r < ranks.size(); ++r)
        QVERIFY2(same_bits(ranks[r], ra.weights.at(step)[0]),
                 qPrintable(QString("step %1, rank %2").arg(step).arg(r)));
    // The checkpoint holds the same tensors, each moment whole.
    const Tensors ta = tensors_of(only_file(a)), tb = tensors_of(only_file(b));
    QCOMPARE(tb.size(), ta.size());
    int moments = 0;
    for (const auto& [key, values] : ta) {
      QVERIFY2(tb.count(key), key.second.c_str());
      QVERIFY2(same_bits(tb.at(key), values), (key.first + " " + key.second).c_str());
      moments += key.first[0] == 'M' || key.first[0] == 'V';
    }
    QVERIFY(moments >= 7);
  }

  // A sharded run's checkpoint continues on 4 ranks sharded exactly as on 4
  // ranks unsharded, and on one rank.
  void checkpointsResumeOnAnyRankCount() {
    Project two = with_optimizer(synthetic(2, true), OptimizerKind::Adam);
    two.training.sharding = Sharding::Optimizer;
    two.training.epochs = 2;
    QTemporaryDir dir;
    TrainOptions first;
    first.checkpoint_dir = dir.path().toStdString();
    first.max_steps = 5;
    run(two, first);
    const std::string path = only_file(dir);
    QVERIFY(!path.empty());
    auto checkpoint = std::make_shared<const Checkpoint>(read_checkpoint(path));
    QCOMPARE(checkpoint->position.step, int64_t{5});
    TrainOptions resume;
    resume.resume = checkpoint;
    resume.resume_source = path;
    std::map<std::string, std::vector<double>> losses;
    for (const auto& [name, world, sharding] :
         {std::tuple{"cpu:4 sharded", 4, Sharding::Optimizer},
          std::tuple{"cpu:4 zero-2", 4, Sharding::OptimizerAndGradients},
          std::tuple{"cpu:4", 4, Sharding::None}, std::tuple{"cpu:1", 1, Sharding::None}}) {
      Project p = with_optimizer(synthetic(world, true), OptimizerKind::Adam);
      p.training.epochs = 2;
      p.training.sharding = sharding;
      const rank_runs::Run r = run(p, resume);
      QCOMPARE(r.losses.size(), size_t{2 * 9 - 5});
      for (double l : r.losses) QVERIFY(std::isfinite(l));
      losses[name] = r.losses;
    }
    QCOMPARE(losses["cpu:4 sharded"], losses["cpu:4"]);
    QCOMPARE(losses["cpu:4 zero-2"], losses["cpu:4"]);
  }

  // ZeRO-2 with the full gradients in bytes of their own (what the compiler
  // picks where the pool would come out larger, as for resnet20 in FP32 on
  // cpu:2) trains the same as in the pool, bit for bit; the default picks
  // the smaller of the two plans.
  void gradientsInTheirOwnBytesTrainTheSame() {
    Project p = with_optimizer(synthetic(2, true), OptimizerKind::Adam);
    p.training.sharding = Sharding::OptimizerAndGradients;
    CompileOptions own, pool;
    own.gradient_place = CompileOptions::GradientPlace::Own;
    pool.gradient_place = CompileOptions::GradientPlace::Pool;
    QVERIFY(!compile_project(p, own).plans.front().gradients_in_pool());
    const rank_runs::Run a = run(p, {}, nullptr, own), b = run(p, {}, nullptr, pool);
    QCOMPARE(a.losses, b.losses);
    for (const auto& [step, ranks] : a.weights) QVERIFY(same_bits(ranks[0], b.weights.at(step)[0]));
    Project r20 = load_project(std::string(TR_PROJECTS_DIR) + "/resnet20.json");
    std::string error;
    QVERIFY(parse_device_set("cpu:2", r20.training.devices, error));
    r20.training.sharding = Sharding::OptimizerAndGradients;
    const CompiledProject chosen = compile_project(r20);
    const uint64_t in_pool = compile_project(r20, pool).bytes_per_device();
    const uint64_t in_own = compile_project(r20, own).bytes_per_device();
    QCOMPARE(chosen.bytes_per_device(), std::min(in_pool, in_own));
    QCOMPARE(chosen.plans.front().gradients_in_pool(), in_pool <= in_own);
  }

  // ZeRO-2's LARS takes each layer's norms from the ranks' squared sums of
  // their shares: the unsharded run's to rounding, over every step.
  void larsWithShardedGradientsMatchesToRounding() {
    const Project plain = with_optimizer(synthetic(4, true), OptimizerKind::LARS);
    Project sharded = plain;
    sharded.training.sharding = Sharding::OptimizerAndGradients;
    const rank_runs::Run ra = run(plain), rb = run(sharded);
    QCOMPARE(rb.losses.size(), ra.losses.size());
    for (size_t i = 0; i < ra.losses.size(); ++i)
      QVERIFY2(std::fabs(rb.losses[i] - ra.losses[i]) <= 1e-5 * std::fabs(ra.losses[i]),
               qPrintable(QString("step %1: %2 against %3")
                              .arg(i)
                              .arg(rb.losses[i], 0, 'g', 10)
                              .arg(ra.losses[i], 0, 'g', 10)));
    for (const auto& [step, ranks] : rb.weights)
      for (size_t r = 0; r < ranks.size(); ++r) {
        QVERIFY(same_bits(ranks[r], ranks[0]));  // the ranks agree bit for bit
        const double d = rank_runs::relative_difference(ranks[r], ra.weights.at(step)[0]);
        QVERIFY2(d <= 1e-5, qPrintable(QString("step %1: weights differ by %2").arg(step).arg(d)));
      }
  }

  // ZeRO-2's plan: each rank keeps its share of the moments and of the
  // summed gradients; the full gradients (FP32 and the 16-bit ones) lie in
  // the pool, each bucket one block, from the backward that writes them to
  // their bucket's reduce-scatter, the deep bucket's across the first
  // layer's backward that its reduce-scatter runs beside.
  void shardedGradientsLiveInThePoolUntilTheirReduceScatter() {
    Project p = with_optimizer(synthetic(4, true), OptimizerKind::Adam);
    p.training.precision = Precision::AMP;
    const CompiledProject plain = compile_project(p);
    p.training.sharding = Sharding::OptimizerAndGradients;
    CompileOptions pool;
    pool.gradient_place = CompileOptions::GradientPlace::Pool;
    const CompiledProject cp = compile_project(p, pool);
    QVERIFY(cp.sharded_gradients && cp.sharded_optimizer);
    const int train = cp.variant_index(VariantKind::Train);
    const MemoryPlan& plan = cp.plans[static_cast<size_t>(train)];
    QVERIFY(plan.gradients_in_pool());
    for (ParamSeries s : {ParamSeries::G, ParamSeries::H})
      for (const GradientBucket& b : kGradientBuckets) {
        QVERIFY(plan.step_local(param_region(s, b.first)));
        QVERIFY(plan.region(param_region(s, b.last)).packed);
        // One block: the bucket's tensors lie one after another in the pool.
        const ByteRange r = plan.region_range(param_region(s, b.first), param_region(s, b.last));
        QVERIFY(r.offset >= plan.pool().offset && r.end() <= plan.pool().end());
      }
    // The shards: S(0), a quarter of their bucket (to a 16-float line).
    int q = 0;
    for (const DTensor& t : plan.dtensors())
      if (region_series(t.region) == 'Q') {
        ++q;
        QCOMPARE(t.placement.str(), std::string("S(0)"));
        QVERIFY(t.shape.elements() * 4 >= t.global_elements);
        QVERIFY(t.shape.elements() * 4 <= t.global_elements + 4 * 16);
      }
    QCOMPARE(q, 2);
    const ShardedBytes s = sharded_bytes(plan), u = sharded_bytes(plain.plans.front());
    QCOMPARE(s.gradients_whole, u.gradients + u.pooled_gradients);
    QCOMPARE(s.moments_whole, u.moments);
    QCOMPARE(s.pooled_gradients, u.gradients);
    // A quarter, but for each of the six shards' slot rounding (M, V, Q of
    // two buckets); the 16-bit gradients are in the pool altogether.
    QVERIFY2(
        s.moments + s.gradients <= (u.moments + u.gradients) / 4 + 6 * 1024,
        qPrintable(QString("%1 of %2").arg(s.moments + s.gradients).arg(u.moments + u.gradients)));
    // The graphs: no ZERO_GRAD, a reduce-scatter per bucket in every
    // training variant's communication, the ranks agreeing on an overflow.
    QVERIFY(!cp.find_graph(GraphId::ZERO_GRAD, train));
    for (size_t v = 0; v < cp.variants.size(); ++v) {
      const ComputationGraph* deep = cp.find_graph(GraphId::DEEP_COMM, static_cast<int>(v));
      if (cp.variants[v].kind == VariantKind::Validation) continue;
      QVERIFY(deep && deep->variant == static_cast<int>(v));
      QCOMPARE(deep->nodes.front().range_op, RangeOp::REDUCE_SCATTER);
    }
    const ComputationGraph* nan = cp.find_graph(GraphId::NAN_CHECK_AND_GRAD_SCALING, train);
    QVERIFY(std::any_of(nan->nodes.begin(), nan->nodes.end(), [](const GraphNode& n) {
      return n.kind == NodeKind::RANGE && n.range_op == RangeOp::ALLREDUCE_MAX;
    }));
    // Lifetimes: the deep bucket's gradients live from the first layer's
    // backward (or earlier) to DEEP_COMM's reduce-scatter.
    const StepLifetimes life = step_lifetimes(cp, train);
    int first_bwd = -1, deep_comm = -1;
    for (size_t i = 0; i < life.order.size(); ++i) {
      if (life.order[i].graph == GraphId::FIRST_LAYER_BWD_A && first_bwd < 0)
        first_bwd = static_cast<int>(i);
      if (life.order[i].graph == GraphId::DEEP_COMM && deep_comm < 0)
        deep_comm = static_cast<int>(i);
    }
    QVERIFY(first_bwd >= 0 && deep_comm > first_bwd);
    int deep = 0;
    for (const TensorLifetime& l : life.tensors) {
      const Region r = plan.get_dtensor(l.id).region;
      if (r != Region::G_DEEP_CONV && r != Region::H_DEEP_CONV) continue;
      ++deep;
      QVERIFY2(l.first <= first_bwd && l.last >= (r == Region::G_DEEP_CONV ? deep_comm : 0),
               plan.get_dtensor(l.id).name.c_str());
    }
    QVERIFY(deep >= 2);
    // What each rank's share holds: over the ranks, every weight of the
    // bucket once, in order, element after element.
    const CompiledPlan handle(std::make_shared<const CompiledProject>(cp));
    for (int b = 0; b < 2; ++b) {
      std::map<std::string, int64_t> next;  // per parameter, the next element expected
      for (int rank = 0; rank < 4; ++rank)
        for (const ShareSlice& slice : handle.rank_share(cp.engine.g_shard[b], rank)) {
          QCOMPARE(slice.first, next[slice.parameter]);
          next[slice.parameter] = slice.first + slice.count;
        }
      const GradientBucket& bucket = kGradientBuckets[b];
      size_t weights = 0;
      for (int k = static_cast<int>(bucket.first); k <= static_cast<int>(bucket.last); ++k)
        for (DTensorId w :
             plan.region(param_region(ParamSeries::W, static_cast<ParamKind>(k))).tensors) {
          ++weights;
          QCOMPARE(next[plan.get_dtensor(w).name], plan.get_dtensor(w).shape.elements());
        }
      QCOMPARE(next.size(), weights);
      QCOMPARE(handle.rank_share(cp.engine.m_shard[b], 2).size(),
               handle.rank_share(cp.engine.g_shard[b], 2).size());
    }
    QVERIFY(handle.rank_share(cp.engine.scalars, 0).empty());
    // Each collective says what it carries (the Timeline shows it).
    auto cause = [&](GraphId g, RangeOp op) {
      const ComputationGraph* graph = cp.find_graph(g, train);
      for (size_t i = 0; graph && i < graph->nodes.size(); ++i)
        if (graph->nodes[i].kind == NodeKind::RANGE && graph->nodes[i].range_op == op)
          return handle.node(g, train, static_cast<int>(i))->collective_cause;
      return std::string("(no such node)");
    };
    QCOMPARE(cause(GraphId::DEEP_COMM, RangeOp::REDUCE_SCATTER),
             std::string("the gradients of the 1 weight of 1 layer (conv2)"));
    QCOMPARE(cause(GraphId::DEEP_COMM, RangeOp::ALLREDUCE_MEAN),
             std::string("the batch's loss, top-1 and top-5"));
    QCOMPARE(cause(GraphId::NAN_CHECK_AND_GRAD_SCALING, RangeOp::ALLREDUCE_MAX),
             std::string("the overflow flag, so that every rank skips an overflowed step"));
    QVERIFY2(cause(GraphId::WEIGHT_GATHER, RangeOp::ALLGATHER)
                     .find("each rank's updated share of the ") == 0,
             cause(GraphId::WEIGHT_GATHER, RangeOp::ALLGATHER).c_str());
  }

  // Each rank's moments are a share of each bucket (a quarter on 4 ranks,
  // but for the last 16-float line), and the plan says how every tensor lies.
  void planHoldsEachRanksShareOfTheMoments() {
    Project p = with_optimizer(synthetic(4, true), OptimizerKind::Adam);
    const CompiledProject plain = compile_project(p);
    p.training.sharding = Sharding::Optimizer;
    const CompiledProject sharded = compile_project(p);
    QVERIFY(sharded.sharded_optimizer && !plain.sharded_optimizer);
    const MemoryPlan& a = plain.plans.front();
    const MemoryPlan& b = sharded.plans.front();
    for (ParamSeries s : {ParamSeries::M, ParamSeries::V}) {
      const uint64_t whole = series_bytes(a, s), share = series_bytes(b, s);
      QVERIFY2(share * 4 <= whole + 4 * 2 * 2 * 1024 && share * 4 >= whole,
               qPrintable(QString("%1 bytes of %2").arg(share).arg(whole)));
    }
    QCOMPARE(series_bytes(b, ParamSeries::W), series_bytes(a, ParamSeries::W));
    QVERIFY(b.total_bytes() < a.total_bytes());
    int shards = 0;
    for (const DTensor& t : b.dtensors()) {
      const char series = region_series(t.region);
      if (series == 'M' || series == 'V') {
        ++shards;
        QCOMPARE(t.placement.str(), std::string("S(0)"));
        QVERIFY(t.global_elements > 3 * t.shape.elements());
      } else if (series == 'G') {
        QCOMPARE(t.placement.kind, PlacementKind::Partial);
      } else {
        QCOMPARE(t.placement.kind, PlacementKind::Replicate);
      }
    }
    QCOMPARE(shards, 4);  // M and V of both buckets
  }

  void oneRankIsRefused() {
    for (Sharding s : {Sharding::Optimizer, Sharding::OptimizerAndGradients}) {
      Project p = synthetic(1, false);
      p.training.sharding = s;
      try {
        compile_project(p);
        QFAIL("sharding one rank compiled");
      } catch (const ProjectError& e) {
        const Diagnostic& d = e.diagnostics().front();
        QCOMPARE(d.field, std::string("training.sharding"));
        QVERIFY2(d.message.find("cpu:1 is one rank") != std::string::npos, d.message.c_str());
        QVERIFY2(d.message.find(std::string(sharding_name(s))) != std::string::npos,
                 d.message.c_str());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestSharding)
#include "test_sharding.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-1 (training.sharding "optimizer") on CPU ranks: each rank holds its
// share of the momentum and Adam's moments, updates its share of the
// weights and gathers the rest. Training is the unsharded run's bit for bit
// (SGD, Adam, LARS, EMA; 2 and 4 ranks), checkpoints hold the same tensors
// and resume on another rank count, sharded or not, the plan holds a
// quarter of the moments on 4 ranks and says how each tensor lies, and
// sharding one rank is refused.
#include <QtTest>

#include <map>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
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
    for (int world : {2, 4}) {
      QTest::addRow("sgd+ema cpu:%d", world) << static_cast<int>(OptimizerKind::SGD) << world;
      QTest::addRow("adam cpu:%d", world) << static_cast<int>(OptimizerKind::Adam) << world;
      QTest::addRow("lars cpu:%d", world) << static_cast<int>(OptimizerKind::LARS) << world;
    }
  }
  void trainsBitForBitAsUnsharded() {
    QFETCH(int, optimizer);
    QFETCH(int, world);
    const Project plain =
        with_optimizer(synthetic(world, true), static_cast<OptimizerKind>(optimizer));
    Project sharded = plain;
    sharded.training.sharding = Sharding::Optimizer;
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
    Project p = synthetic(1, false);
    p.training.sharding = Sharding::Optimizer;
    try {
      compile_project(p);
      QFAIL("sharding one rank compiled");
    } catch (const ProjectError& e) {
      const Diagnostic& d = e.diagnostics().front();
      QCOMPARE(d.field, std::string("training.sharding"));
      QVERIFY2(d.message.find("cpu:1 is one rank") != std::string::npos, d.message.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestSharding)
#include "test_sharding.moc"

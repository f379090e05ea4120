// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingRecorder with the real trainer: every step and epoch the trainer
// reports reaches the store unchanged, checkpoints are recorded with their
// epoch and metrics, and the end status follows how training ended.
#include <QtTest>

#include <atomic>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/run_store.h>
#include <renaissance/training_recorder.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "runtime/trainer.h"

using namespace tr;

namespace {

struct Trained {
  TrainReport report;
  std::vector<StepReport> steps;
  int64_t run = 0;
};

// What the recorder is told of the data, as TrainingJob tells it.
TrainingContext context_of(const DataSource& data) {
  TrainingContext c;
  c.dataset = data.describe();
  c.train_samples = data.size(Split::Train);
  c.validation_samples = data.size(Split::Val);
  c.cpu_threads = cpu::cpu_threads();
  return c;
}

// tiny-synthetic: 600 samples in batches of 64, so 9 full steps and a partial one of 24.
Trained train_tiny(const std::string& store_path, TrainOptions options,
                   Precision precision = Precision::FP32) {
  Project p = load_project(TR_TEST_DATA "/projects/tiny-synthetic.json");
  p.training.precision = precision;
  const CompiledPlan plan = compile_plan(p);
  const CompiledProject& cp = plan.program();
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  auto backend = cpu::make_cpu_backend({cp.world_size, true});
  store::TrainingRecorder recorder(store_path, plan, context_of(*data), options);
  Trained t;
  TrainCallbacks cb;
  cb.on_step = [&](const StepReport& s) { t.steps.push_back(s); };
  recorder.attach(cb);
  t.report = train(cp, *backend, *data, options, cb);
  t.run = recorder.run_id();
  const std::string problem = recorder.ended(t.report);
  if (!problem.empty()) throw std::runtime_error(problem);
  return t;
}

}  // namespace

class TestTrainingRecorder : public QObject {
  Q_OBJECT

 private slots:
  void recordsWhatTheTrainerReports() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.sqlite").toStdString();
    TrainOptions options;
    options.checkpoint_dir = dir.filePath("ckpt").toStdString();
    const Trained t = train_tiny(path, options);
    QCOMPARE(t.steps.size(), size_t{20});

    const store::RunStore s(path);
    const store::RunDetail d = s.run(t.run);
    QCOMPARE(d.summary.status, store::RunStatus::Finished);
    QCOMPARE(d.summary.name, std::string("tiny-synthetic"));
    QCOMPARE(d.summary.devices, std::string("cpu:1"));
    QCOMPARE(d.summary.precision, std::string("fp32"));
    QCOMPARE(d.summary.seed, uint64_t{3});
    QCOMPARE(d.summary.steps, int64_t{20});
    QCOMPARE(d.summary.epochs, int64_t{2});
    const auto project = nlohmann::json::parse(d.project_json);
    QCOMPARE(project.at("name"), "tiny-synthetic");
    const auto hyper = nlohmann::json::parse(d.hyper_json);
    QCOMPARE(hyper.at("optimizer").at("lr").get<double>(), 0.05);
    QCOMPARE(hyper.at("global_batch").get<int>(), 64);
    QVERIFY(hyper.at("max_steps").is_null());

    const auto curve = s.step_curve(t.run);
    QCOMPARE(curve.size(), t.steps.size());
    for (size_t i = 0; i < curve.size(); ++i) {
      const StepReport& want = t.steps[i];
      QCOMPARE(curve[i].step, want.step);
      QCOMPARE(curve[i].epoch, want.epoch);
      QCOMPARE(curve[i].loss, want.loss);
      QCOMPARE(curve[i].top1, want.top1);
      QCOMPARE(curve[i].lr, want.lr);
      QCOMPARE(curve[i].images_per_s, (want.partial ? 24.0 : 64.0) / want.seconds);
      QVERIFY(!curve[i].loss_scale);
    }
    QCOMPARE(t.steps[9].partial, true);

    const auto epochs = s.epochs(t.run);
    QCOMPARE(epochs.size(), t.report.epochs.size());
    for (size_t i = 0; i < epochs.size(); ++i) {
      const EpochReport& want = t.report.epochs[i];
      QCOMPARE(epochs[i].train_loss, want.train_loss);
      QCOMPARE(epochs[i].val_loss.value_or(-1), want.val_loss);
      QCOMPARE(epochs[i].val_top1.value_or(-1), want.val_top1);
      QCOMPARE(epochs[i].val_top5.value_or(-1), want.val_top5);
      QCOMPARE(epochs[i].images_per_s, want.images_per_s);
      QCOMPARE(epochs[i].confusion, want.confusion);
    }
    QCOMPARE(d.summary.final_val_top1.value_or(-1), t.report.epochs.back().val_top1);

    // One checkpoint per epoch end, with the epochs it holds and their figures.
    const auto ck = s.checkpoints(t.run);
    QCOMPARE(ck.size(), t.report.checkpoints.size());
    QCOMPARE(ck.size(), size_t{2});
    for (size_t i = 0; i < ck.size(); ++i) {
      QCOMPARE(ck[i].path, t.report.checkpoints[i]);
      QCOMPARE(ck[i].epoch.value_or(-1), static_cast<int64_t>(i + 1));
      const auto m = nlohmann::json::parse(ck[i].metrics_json);
      QCOMPARE(m.at("val_top1").get<double>(), t.report.epochs[i].val_top1);
    }
  }

  void mixedPrecisionRecordsTheLossScale() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.sqlite").toStdString();
    const Trained t = train_tiny(path, {}, Precision::AMP);
    const store::RunStore s(path);
    QCOMPARE(s.run(t.run).summary.precision, std::string("amp"));
    const auto curve = s.step_curve(t.run);
    QCOMPARE(curve.size(), t.steps.size());
    for (size_t i = 0; i < curve.size(); ++i) {
      QVERIFY(t.steps[i].loss_scale > 0);
      QCOMPARE(curve[i].loss_scale.value_or(-1), t.steps[i].loss_scale);
    }
  }

  // A run that ends at max_steps is finished and validated as at an epoch
  // end, its step checkpoint naming the step training goes on from.
  void maxStepsRunsAreFinishedAndValidated() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.sqlite").toStdString();
    TrainOptions options;
    options.max_steps = 3;
    options.checkpoint_dir = dir.filePath("ckpt").toStdString();
    const Trained t = train_tiny(path, options);
    QVERIFY(t.report.reached_max_steps);
    QVERIFY(!t.report.stopped);
    const store::RunStore s(path);
    const store::RunDetail d = s.run(t.run);
    QCOMPARE(d.summary.status, store::RunStatus::Finished);
    QCOMPARE(d.summary.steps, int64_t{3});
    QCOMPARE(nlohmann::json::parse(d.hyper_json).at("max_steps").get<int>(), 3);
    const auto epochs = s.epochs(t.run);
    QCOMPARE(epochs.size(), size_t{1});
    QVERIFY(epochs[0].val_top1.has_value());
    QCOMPARE(epochs[0].confusion.size(), size_t{16});  // 4 classes
    // The step limit validates what it trained, but 3 of 10 steps are still
    // a partial epoch.
    QVERIFY(epochs[0].partial());
    QCOMPARE(epochs[0].steps, int64_t{3});
    QCOMPARE(d.summary.epochs, int64_t{0});
    QCOMPARE(d.summary.final_val_top1.value_or(-1), t.report.epochs.back().val_top1);
    const auto ck = s.checkpoints(t.run);
    QCOMPARE(ck.size(), size_t{1});
    QCOMPARE(ck[0].step.value_or(-1), int64_t{3});
    QVERIFY(!ck[0].epoch);
  }

  // A stop request ends the run as stopped: checkpointed, not validated.
  void stopRequestsAreStopped() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("runs.sqlite").toStdString();
    std::atomic<bool> stop{false};
    TrainOptions options;
    options.stop = &stop;
    options.checkpoint_dir = dir.filePath("ckpt").toStdString();
    Project p = load_project(TR_TEST_DATA "/projects/tiny-synthetic.json");
    const CompiledPlan plan = compile_plan(p);
    const CompiledProject& cp = plan.program();
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    auto backend = cpu::make_cpu_backend({cp.world_size, true});
    store::TrainingRecorder recorder(path, plan, context_of(*data), options);
    TrainCallbacks cb;
    cb.on_step = [&](const StepReport& st) {
      if (st.step == 3) stop = true;
    };
    recorder.attach(cb);
    const TrainReport report = train(cp, *backend, *data, options, cb);
    QVERIFY(report.stopped);
    QVERIFY(!report.reached_max_steps);
    QCOMPARE(recorder.ended(report), std::string());
    const store::RunStore s(path);
    const store::RunDetail d = s.run(recorder.run_id());
    QCOMPARE(d.summary.status, store::RunStatus::Stopped);
    QCOMPARE(d.summary.steps, int64_t{5});
    const auto epochs = s.epochs(recorder.run_id());
    QCOMPARE(epochs.size(), size_t{1});
    QVERIFY(!epochs[0].val_top1);
    // The epoch it cut short is kept as such: 5 of its 10 steps (600 images
    // in batches of 64; step 4 was on its way when step 3 asked to stop),
    // and no whole epoch counted.
    QCOMPARE(report.epochs.at(0).steps, int64_t{5});
    QCOMPARE(report.epochs.at(0).batches, int64_t{10});
    QVERIFY(!report.epochs.at(0).complete());
    QVERIFY(epochs[0].partial());
    QCOMPARE(epochs[0].steps, int64_t{5});
    QCOMPARE(epochs[0].batches, int64_t{10});
    QCOMPARE(d.summary.epochs, int64_t{0});
    const auto ck = s.checkpoints(recorder.run_id());
    QCOMPARE(ck.size(), size_t{1});
    QCOMPARE(ck[0].step.value_or(-1), int64_t{5});
  }
};

QTEST_GUILESS_MAIN(TestTrainingRecorder)
#include "test_training_recorder.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints: a run stopped mid-epoch (or at an epoch end) and resumed from
// its checkpoint continues bit for bit (losses, data order, dropout masks,
// optimizer, EMA and BN state); a checkpoint from 2 ranks resumes on 1 and 4;
// damaged, truncated and foreign files are refused with messages that say
// what is wrong; and the command line saves and resumes.
#include <QtTest>

#include <atomic>
#include <fstream>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/training_job.h>
#include "rank_runs.h"
#include "runtime/checkpoint_state.h"
#include "usage_error.h"
using namespace tr;
using rank_runs::relative_difference;
using rank_runs::run;
using rank_runs::same_bits;
using rank_runs::synthetic;
using tr::test::usage_error;

namespace {

// BN, dropout, momentum and an EMA: every kind of state a step carries on.
Project stateful(int world) {
  Project p = synthetic(world, true, true);
  p.training.epochs = 2;
  p.training.ema = true;
  p.training.ema_decay = 0.9;
  return p;
}

TrainOptions resume_from(const std::string& path, int64_t max_steps = -1) {
  TrainOptions o;
  o.resume = std::make_shared<Checkpoint>(read_checkpoint(path));
  o.resume_source = path;
  o.max_steps = max_steps;
  return o;
}

TrainOptions saving_to(const QTemporaryDir& dir, int64_t max_steps = -1) {
  TrainOptions o;
  o.checkpoint_dir = dir.path().toStdString();
  o.max_steps = max_steps;
  return o;
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

struct Cli {
  int code = -1;
  QString out, err;
};

Cli run_cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(TR_CLI), args);
  if (!p.waitForFinished(300000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT

 private slots:
  // --init-from: a new run (step 0, new optimizer state) from another
  // project's weights and BN statistics; a last layer for another class
  // count starts fresh and is named; the EMA starts from the weights.
  void initFromStartsANewRunFromTheWeights() {
    const Project a = stateful(1);
    QTemporaryDir dir;
    run(a, saving_to(dir, 5));
    const std::string saved = dir.filePath("ranks-bn-step5.ckpt").toStdString();
    const Checkpoint c = read_checkpoint(saved);
    Project b = a;
    b.name = "ranks-bn-3-classes";
    b.model.nodes[static_cast<size_t>(b.model.find("fc"))].params.out_channels = 3;
    b.dataset.classes = 3;
    const CompiledProject cp = compile_project(b);
    auto backend = cpu::make_cpu_backend({1, true});
    TrainingSession session(cp, *backend);
    session.initialize(b.training.seed);
    const MemoryPlan& plan = cp.plans.front();
    std::map<std::string, std::vector<float>> before;
    for (DTensorId id : persistent_tensors(cp))
      before[std::string(region_name(plan.get_dtensor(id).region)) + " " +
             plan.get_dtensor(id).name] = session.read_tensor(0, id);
    std::vector<std::string> fresh;
    const int64_t loaded = init_from_checkpoint(cp, session, c, saved, fresh);
    auto saved_value = [&](const std::string& region, const std::string& name) {
      for (const CheckpointTensor& t : c.tensors)
        if (t.region == region && t.name == name) return t.values;
      return std::vector<float>{};
    };
    int64_t weights = 0, moments = 0;
    for (DTensorId id : persistent_tensors(cp)) {
      const DTensor& t = plan.get_dtensor(id);
      const std::string region(region_name(t.region));
      const std::vector<float> now = session.read_tensor(0, id);
      const bool last = t.name.rfind("fc.", 0) == 0;
      if (region[0] == 'W' || region.rfind("B_PREV_", 0) == 0) {
        QVERIFY2(last ? now == before[region + " " + t.name] : now == saved_value(region, t.name),
                 t.name.c_str());
        weights += last ? 0 : 1;
      } else if (region[0] == 'E') {
        QVERIFY2(last || now == saved_value("W" + region.substr(1), t.name), t.name.c_str());
      } else {
        // Optimizer moments are a new run's, though the checkpoint's are not zero.
        QVERIFY2(now == before[region + " " + t.name], t.name.c_str());
        QVERIFY(saved_value(region, t.name) != now);
        ++moments;
      }
    }
    QVERIFY(moments > 0);
    QCOMPARE(loaded, weights);
    QCOMPARE(fresh, (std::vector<std::string>{
                        "fc.bias: [1,1,1,3] here, [1,1,1,4] in the checkpoint",
                        "fc.weight: [3,1,1,128] here, [4,1,1,128] in the checkpoint"}));
    // Through a run: it starts at step 0 and says what it took.
    TrainOptions o;
    o.init_from = std::make_shared<Checkpoint>(c);
    o.init_from_source = saved;
    o.max_steps = 2;
    const rank_runs::Run r = run(b, o);
    QCOMPARE(r.report.first_step, int64_t{0});
    QCOMPARE(r.report.steps, int64_t{2});
    QCOMPARE(r.report.init_loaded, loaded);
    QCOMPARE(r.report.init_fresh, fresh);
    // Not with --resume; and a checkpoint with nothing that fits is refused.
    o.resume = o.init_from;
    o.resume_source = saved;
    QVERIFY(usage_error([&] { run(a, o); }).contains("give one of them"));
    Checkpoint foreign = c;
    for (CheckpointTensor& t : foreign.tensors) t.name = "other." + t.name;
    fresh.clear();
    const QString why =
        usage_error([&] { init_from_checkpoint(cp, session, foreign, "foreign.ckpt", fresh); });
    QVERIFY2(why.contains("checkpoint 'foreign.ckpt' (of project 'ranks-bn') has no weight of the "
                          "same name and shape as project 'ranks-bn-3-classes' needs"),
             qPrintable(why));
  }

  // TrainOptions::final_weights: a run that trained keeps the weights it
  // ended with (finished or stopped), the weights, EMA and BN statistics
  // only, and they predict and fine-tune as its checkpoint would; a run
  // that trained no step keeps none.
  void runsKeepTheirFinalWeights() {
    const Project a = stateful(1);
    QTemporaryDir dir;
    TrainOptions o = saving_to(dir, 5);
    o.final_weights = dir.filePath("runs.files/run-1/final.ckpt").toStdString();
    const rank_runs::Run r = run(a, o);
    QCOMPARE(r.report.final_weights, o.final_weights);
    QVERIFY(r.report.final_weights_error.empty());
    const Checkpoint kept = read_checkpoint(o.final_weights);
    const Checkpoint full = read_checkpoint(dir.filePath("ranks-bn-step5.ckpt").toStdString());
    QCOMPARE(kept.position.step, int64_t{5});
    int64_t w = 0, e = 0, b = 0;
    for (const CheckpointTensor& t : kept.tensors) {
      QVERIFY2(t.region[0] == 'W' || t.region[0] == 'E' || t.region[0] == 'B', t.region.c_str());
      w += t.region[0] == 'W';
      e += t.region[0] == 'E';
      b += t.region[0] == 'B';
      // The same values as the run's full checkpoint at the same step.
      bool found = false;
      for (const CheckpointTensor& u : full.tensors)
        if (u.region == t.region && u.name == t.name) found = u.values == t.values;
      QVERIFY2(found, (t.region + " " + t.name).c_str());
    }
    QVERIFY(w > 0 && e > 0 && b > 0);
    QVERIFY(kept.tensors.size() < full.tensors.size());  // no optimizer moments
    // It starts a fine-tuning run, and, named by the project, without options.
    Project b2 = a;
    b2.training.init_from = o.final_weights;
    TrainOptions from_project;
    from_project.max_steps = 1;
    apply_project_init_from(b2, from_project);
    QCOMPARE(from_project.init_from_source, o.final_weights);
    const rank_runs::Run tuned = run(b2, from_project);
    QVERIFY(tuned.report.init_loaded >= w);
    QVERIFY(tuned.report.init_fresh.empty());
    // Relative to the project file's folder.
    b2.source_path = dir.filePath("p.json").toStdString();
    b2.training.init_from = "runs.files/run-1/final.ckpt";
    TrainOptions relative;
    apply_project_init_from(b2, relative);
    QCOMPARE(relative.init_from_source, o.final_weights);
    // A run's --init-from wins over the project's; a resumed run takes neither.
    TrainOptions given;
    given.init_from = std::make_shared<Checkpoint>(full);
    given.init_from_source = "given.ckpt";
    apply_project_init_from(b2, given);
    QCOMPARE(given.init_from_source, std::string("given.ckpt"));
    // A missing file is named.
    b2.training.init_from = "nowhere.ckpt";
    TrainOptions missing;
    const QString why = usage_error([&] { apply_project_init_from(b2, missing); });
    QVERIFY2(why.startsWith("the project's starting weights (\"training.init_from\"): ") &&
                 why.contains(dir.filePath("nowhere.ckpt")),
             qPrintable(why));

    // Stopped before its first step: nothing kept.
    std::atomic<bool> stop{true};
    TrainOptions stopped;
    stopped.stop = &stop;
    stopped.final_weights = dir.filePath("none/final.ckpt").toStdString();
    const rank_runs::Run none = run(a, stopped);
    QVERIFY(none.report.stopped);
    QVERIFY(none.report.final_weights.empty());
    QVERIFY(!QFile::exists(dir.filePath("none/final.ckpt")));
    // A folder that cannot be made: said, and the run still ends well.
    std::ofstream(dir.filePath("file").toStdString()) << "x";
    TrainOptions blocked;
    blocked.max_steps = 1;
    blocked.final_weights = dir.filePath("file/final.ckpt").toStdString();
    const rank_runs::Run r2 = run(a, blocked);
    QVERIFY(r2.report.final_weights.empty());
    QVERIFY2(r2.report.final_weights_error.find("cannot be made") != std::string::npos,
             r2.report.final_weights_error.c_str());
  }

  void resumeMidEpochContinuesBitForBit() {
    const Project p = stateful(1);
    const rank_runs::Run whole = run(p);
    QCOMPARE(whole.report.steps, int64_t{18});
    QTemporaryDir dir;
    const rank_runs::Run first = run(p, saving_to(dir, 5));
    QVERIFY(first.report.reached_max_steps);
    // The step limit validated the run; the state it saved is still the training state.
    QCOMPARE(first.report.epochs.size(), size_t{1});
    QVERIFY(first.report.epochs[0].validated);
    QCOMPARE(first.report.checkpoints.size(), size_t{1});
    const std::string saved = first.report.checkpoints[0];
    QVERIFY2(QString::fromStdString(saved).endsWith("ranks-bn-step5.ckpt"), saved.c_str());
    const Checkpoint c = read_checkpoint(saved);
    QCOMPARE(c.position.epoch, int64_t{0});
    QCOMPARE(c.position.batch, int64_t{5});
    QCOMPARE(c.position.step, int64_t{5});
    QCOMPARE(c.project_name, std::string("ranks-bn"));

    const rank_runs::Run rest = run(p, resume_from(saved));
    QCOMPARE(rest.report.first_step, int64_t{5});
    QCOMPARE(rest.report.steps, int64_t{18});
    const std::vector<double> expected(whole.losses.begin() + 5, whole.losses.end());
    QCOMPARE(rest.losses, expected);  // bit for bit: same batches, masks, state
    QVERIFY(same_bits(rest.weights.at(17)[0], whole.weights.at(17)[0]));
    QVERIFY(same_bits(rest.stats.at(17)[0], whole.stats.at(17)[0]));
    QCOMPARE(rest.report.epochs.back().val_loss, whole.report.epochs.back().val_loss);
  }

  void resumeFromAnEpochEnd() {
    const Project p = stateful(1);
    QTemporaryDir dir;
    const rank_runs::Run whole = run(p, saving_to(dir));
    QCOMPARE(whole.report.checkpoints.size(), size_t{2});
    const std::string epoch1 = whole.report.checkpoints[0];
    QVERIFY2(QString::fromStdString(epoch1).endsWith("ranks-bn-epoch1.ckpt"), epoch1.c_str());
    const rank_runs::Run rest = run(p, resume_from(epoch1));
    const std::vector<double> expected(whole.losses.begin() + 9, whole.losses.end());
    QCOMPARE(rest.losses, expected);
    QCOMPARE(rest.report.epochs.size(), size_t{1});
    QCOMPARE(rest.report.epochs[0].epoch, int64_t{1});
    // The last checkpoint is at the end of training: nothing is left to do.
    const QString m = usage_error([&] { run(p, resume_from(whole.report.checkpoints[1])); });
    QVERIFY2(m.contains("end of epoch 2") && m.contains("--epochs"), qPrintable(m));
  }

  void resumeOnAnotherRankCount() {
    Project p = synthetic(2, false);
    p.training.epochs = 2;
    const rank_runs::Run whole = run(p);
    QTemporaryDir dir;
    const rank_runs::Run first = run(p, saving_to(dir, 6));
    const std::string saved = first.report.checkpoints.at(0);
    QCOMPARE(read_checkpoint(saved).world_size, 2);
    for (int world : {1, 4}) {
      Project q = synthetic(world, false);
      q.training.epochs = 2;
      const rank_runs::Run rest = run(q, resume_from(saved));
      QCOMPARE(rest.losses.size(), whole.losses.size() - 6);
      for (size_t i = 0; i < rest.losses.size(); ++i)
        QVERIFY2(std::fabs(rest.losses[i] - whole.losses[i + 6]) <= 1e-5 * whole.losses[i + 6],
                 qPrintable(QString("%1 ranks, step %2").arg(world).arg(i + 6)));
      const double d = relative_difference(rest.weights.at(17)[0], whole.weights.at(17)[0]);
      QVERIFY2(d < 1e-5, qPrintable(QString("%1 ranks: %2").arg(world).arg(d)));
      for (size_t k = 1; k < rest.weights.at(17).size(); ++k)
        QVERIFY(same_bits(rest.weights.at(17)[k], rest.weights.at(17)[0]));
    }
  }

  void damagedFilesAreRefused() {
    QTemporaryDir dir;
    const std::string good = run(stateful(1), saving_to(dir, 2)).report.checkpoints.at(0);
    const std::string bytes = bytes_of(good);
    QVERIFY(bytes.size() > 1000);
    const std::string bad = dir.filePath("bad.ckpt").toStdString();
    auto refused = [&](const std::string& content) {
      write_bytes(bad, content);
      return usage_error([&] { read_checkpoint(bad); });
    };
    auto flipped = [&](size_t at) {
      std::string b = bytes;
      b[at] = static_cast<char>(b[at] ^ 0x20);
      return b;
    };
    const QString where = QString::fromStdString(bad);
    QString m = refused("{\"format\": 1, \"model\": {}}\n");
    QVERIFY2(m.contains(where) && m.contains("not a checkpoint"), qPrintable(m));
    m = refused("RW");
    QVERIFY2(m.contains("not a checkpoint"), qPrintable(m));
    m = refused(bytes.substr(0, bytes.size() - 7));
    QVERIFY2(m.contains("truncated"), qPrintable(m));
    m = refused(bytes.substr(0, 30));
    QVERIFY2(m.contains("truncated") || m.contains("exceeds"), qPrintable(m));
    m = refused(bytes + "junk");
    QVERIFY2(m.contains("unexpected bytes"), qPrintable(m));
    m = refused(flipped(bytes.size() - 3));
    QVERIFY2(m.contains("does not match its checksum") && m.contains("in "), qPrintable(m));
    m = refused(flipped(40));
    QVERIFY2(m.contains("header checksum"), qPrintable(m));
    std::string newer = bytes;
    newer[8] = 2;
    m = refused(newer);
    QVERIFY2(m.contains("format 2 is not supported"), qPrintable(m));
    m = usage_error([&] { read_checkpoint(dir.filePath("missing.ckpt").toStdString()); });
    QVERIFY2(m.contains("missing.ckpt") && m.contains("cannot open"), qPrintable(m));
    // The intact file still reads.
    QCOMPARE(read_checkpoint(good).position.step, int64_t{2});
  }

  void foreignCheckpointsAreRefused() {
    QTemporaryDir dir;
    const Project p = synthetic(1, false);
    const std::string saved = run(p, saving_to(dir, 3)).report.checkpoints.at(0);
    auto refused = [&](const Project& q) {
      return usage_error([&] { run(q, resume_from(saved)); });
    };

    Project other = p;
    other.name = "someone-else";
    QString m = refused(other);
    QVERIFY2(m.contains("belongs to project 'ranks-plain'"), qPrintable(m));

    Project narrower = p;
    narrower.model.nodes[static_cast<size_t>(narrower.model.find("conv1"))].params.out_channels = 4;
    m = refused(narrower);
    QVERIFY2(m.contains("conv1.weight") && m.contains("[4,3,3,1]") && m.contains("[6,3,3,1]"),
             qPrintable(m));

    Project seed = p;
    seed.training.seed = 6;
    m = refused(seed);
    QVERIFY2(m.contains("seed 5") && m.contains("--seed 5"), qPrintable(m));

    Project batch = p;
    batch.training.global_batch = 16;
    m = refused(batch);
    QVERIFY2(m.contains("global batch 32") && m.contains("--batch 32"), qPrintable(m));

    Project adam = p;
    adam.training.optimizer.kind = OptimizerKind::Adam;
    m = refused(adam);
    QVERIFY2(m.contains("optimizer sgd") && m.contains("adam"), qPrintable(m));
  }

  void emaMayBeSwitchedOnOrOffAtResume() {
    QTemporaryDir dir;
    const Project plain = synthetic(2, false);
    const std::string without = run(plain, saving_to(dir, 3)).report.checkpoints.at(0);
    Project with_ema = plain;
    with_ema.training.ema = true;
    TrainOptions o = resume_from(without, 4);
    o.eval_ema = true;
    // The EMA the checkpoint lacks starts from its weights; one it has but
    // the project does not keep is left out.
    const rank_runs::Run a = run(with_ema, o);
    QCOMPARE(a.report.steps, int64_t{4});

    QTemporaryDir dir2;
    const std::string with = run(with_ema, saving_to(dir2, 3)).report.checkpoints.at(0);
    QCOMPARE(run(plain, resume_from(with, 4)).report.steps, int64_t{4});
  }

  void commandLineSavesAndResumesOnAnotherRankCount() {
    QTemporaryDir dir;
    const QString tiny = QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json";
    const QString ckpts = dir.filePath("ckpt");
    Cli r = run_cli({"train", tiny, "--checkpoint-dir", ckpts, "--max-steps", "3", "--no-store"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString saved = ckpts + "/tiny-synthetic-step3.ckpt";
    QVERIFY2(r.out.contains("checkpoint " + saved), qPrintable(r.out));
    r = run_cli({"train", tiny, "--resume", saved, "--devices", "cpu:2", "--no-store"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("resuming from " + saved + ": epoch 1, batch 4, step 3"),
             qPrintable(r.out));
    QVERIFY(r.out.contains("epoch 2/2"));
    // The step limit counts the steps before the checkpoint: 3 leaves none.
    r = run_cli({"train", tiny, "--resume", saved, "--max-steps", "3", "--no-store"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("at step 3") && r.err.contains("leaves nothing to train"),
             qPrintable(r.err));
    r = run_cli({"train", tiny, "--resume", saved, "--seed", "9", "--no-store"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("seed 3"), qPrintable(r.err));
    r = run_cli({"train", tiny, "--resume", tiny, "--no-store"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("not a checkpoint"), qPrintable(r.err));
  }
};

QTEST_APPLESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli train --resume-run ID`: a run killed with SIGKILL lists
// the checkpoints it wrote (recorded as written, not at the end), and
// resuming it continues the same run record from its latest checkpoint with
// no gap in step numbers and the very loss curve of an uninterrupted run
// with the same seed; the resumption is recorded. Runs that cannot be
// resumed (finished, no checkpoint, files gone) say why, and an earlier
// checkpoint is taken when the latest is gone.
#include <QtTest>

#include <signal.h>

#include <filesystem>
#include <thread>

#include <renaissance/run_store.h>
#include "cli_process.h"

using tr::store::RunStatus;
using tr::store::RunStore;

namespace {

// 20 epochs of 100 steps: the run is killed after its second epoch, with
// 1,800 steps (seconds at -O3, half a minute under AddressSanitizer) to go.
constexpr int64_t kSteps = 2000;

tr::test::ProcessRun cli(const QStringList& args) {
  return tr::test::run_process(QStringLiteral(TR_CLI), args);
}

}  // namespace

class TestRunResume : public QObject {
  Q_OBJECT

 private slots:
  void killedRunContinuesAsTheSameRun() {
    QTemporaryDir dir;
    // 6,400 training samples: 100 steps an epoch.
    const QString project = tr::test::tiny_synthetic(dir.path(), "hundred-steps.json", 6400, 100);
    const QString store = dir.filePath("runs.sqlite");
    const QString folder = dir.filePath("ckpt");
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral(TR_CLI), {"train", project, "--max-steps", QString::number(kSteps),
                                     "--checkpoint-dir", folder, "--store", store});
    QVERIFY(p.waitForStarted());
    // Killed once two epoch checkpoints are in the store: they are recorded
    // as they are written, and the run is far from its end.
    size_t recorded = 0;
    for (int i = 0; i < 3000 && recorded < 2 && p.state() == QProcess::Running; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!QFile::exists(store)) continue;
      const RunStore s(store.toStdString());
      if (s.has_run(1)) recorded = s.checkpoints(1).size();
    }
    QVERIFY2(p.state() == QProcess::Running,
             qPrintable("training ended before it could be killed: " + p.readAll()));
    QVERIFY(recorded >= 2);
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGKILL), 0);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);

    int64_t resumed_from = 0, recorded_steps = 0;
    {
      const RunStore s(store.toStdString());  // finds the dead writer
      QCOMPARE(s.run(1).summary.status, RunStatus::Interrupted);
      const auto checkpoints = s.checkpoints(1);
      QVERIFY(checkpoints.size() >= 2);
      for (const auto& c : checkpoints)
        QVERIFY2(QFile::exists(QString::fromStdString(c.path)), c.path.c_str());
      resumed_from = *checkpoints.back().step;
      recorded_steps = static_cast<int64_t>(s.step_curve(1).size());
      QVERIFY(resumed_from < kSteps);
    }
    const tr::test::ProcessRun hint = cli({"runs", "show", "1", "--store", store});
    QVERIFY2(hint.out.contains("continue  renaissance-cli train --resume-run 1\n"),
             qPrintable(hint.out));

    const tr::test::ProcessRun r = cli({"train", "--resume-run", "1", "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains("resuming run 1 (interrupted) from "), qPrintable(r.out));
    QVERIFY2(r.out.contains("continuing run 1 in " + store + " from step " +
                            QString::number(resumed_from)),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("finished at --max-steps " + QString::number(kSteps)),
             qPrintable(r.out));

    // The same seed, never interrupted, into the same store: run 2.
    const tr::test::ProcessRun whole =
        cli({"train", project, "--max-steps", QString::number(kSteps), "--checkpoint-dir",
             dir.filePath("whole"), "--store", store});
    QVERIFY2(whole.code == 0, qPrintable(whole.out));

    const RunStore s(store.toStdString());
    QCOMPARE(s.list_runs().size(), size_t{2});  // no new run for the resumption
    QCOMPARE(s.run(1).summary.status, RunStatus::Finished);
    QCOMPARE(s.run(1).summary.steps, kSteps);
    const auto resumed = s.step_curve(1);
    const auto uninterrupted = s.step_curve(2);
    QCOMPARE(resumed.size(), static_cast<size_t>(kSteps));
    QCOMPARE(uninterrupted.size(), static_cast<size_t>(kSteps));
    for (size_t i = 0; i < resumed.size(); ++i) {
      QCOMPARE(resumed[i].step, static_cast<int64_t>(i));  // no gap, no repeat
      QCOMPARE(resumed[i].epoch, uninterrupted[i].epoch);
      if (resumed[i].loss != uninterrupted[i].loss || resumed[i].lr != uninterrupted[i].lr)
        QFAIL(qPrintable(QString("step %1: loss %2 (lr %3) resumed, %4 (lr %5) uninterrupted")
                             .arg(i)
                             .arg(resumed[i].loss, 0, 'g', 17)
                             .arg(resumed[i].lr)
                             .arg(uninterrupted[i].loss, 0, 'g', 17)
                             .arg(uninterrupted[i].lr)));
    }
    // Whole epochs after the checkpoint train exactly as they did uninterrupted.
    const auto e1 = s.epochs(1), e2 = s.epochs(2);
    QCOMPARE(e1.size(), e2.size());
    QCOMPARE(e1.back().val_loss, e2.back().val_loss);
    QCOMPARE(e1.back().train_loss, e2.back().train_loss);

    const auto resumes = s.resumes(1);
    QCOMPARE(resumes.size(), size_t{1});
    QCOMPARE(resumes[0].previous_status, RunStatus::Interrupted);
    QCOMPARE(resumes[0].from_step, resumed_from);
    QCOMPARE(resumes[0].retrained_steps, std::max<int64_t>(0, recorded_steps - resumed_from));
    QVERIFY(resumes[0].resumed_at > resumes[0].last_update);
    QVERIFY(QString::fromStdString(resumes[0].checkpoint_path).startsWith(folder));
    // New checkpoints went on into the run's own folder.
    QVERIFY(
        QFile::exists(folder + QStringLiteral("/tiny-synthetic-epoch%1.ckpt").arg(kSteps / 100)));

    const tr::test::ProcessRun show = cli({"runs", "show", "1", "--store", store});
    QVERIFY2(show.out.contains("resumed "), qPrintable(show.out));
  }

  void whatCannotBeResumedSaysWhy() {
    QTemporaryDir dir;
    const QString tiny = QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json";
    const QString store = dir.filePath("runs.sqlite");
    const QString folder = dir.filePath("ckpt");
    // Run 1 finishes; run 2 stops at its step limit without checkpoints;
    // runs 3 and 4 are stopped runs whose checkpoint files go (all, or the
    // latest).
    QCOMPARE(cli({"train", tiny, "--max-steps", "3", "--store", store, "--no-validation"}).code, 0);
    for (int run = 2; run <= 4; ++run) {
      QStringList args{"train",    tiny, "--store",     store, "--no-validation",
                       "--epochs", "5",  "--max-steps", "25"};
      if (run > 2) args << "--checkpoint-dir" << folder + QString::number(run);
      QCOMPARE(cli(args).code, 0);
    }
    {
      // A finished run cannot be resumed; make 2-4 look stopped, as a stop
      // request would leave them.
      const std::string path = store.toStdString();
      RunStore s(path);
      for (int64_t run = 2; run <= 4; ++run) s.end_run(run, tr::store::RunStatus::Stopped);
    }
    std::filesystem::remove_all((folder + "3").toStdString());
    QVERIFY(QFile::remove(folder + "4/tiny-synthetic-step25.ckpt"));

    auto refused = [&](const QString& run, const QString& words) {
      const tr::test::ProcessRun r = cli({"train", "--resume-run", run, "--store", store});
      QVERIFY2(r.code != 0 && r.out.contains(words), qPrintable(run + ": " + r.out));
    };
    refused("1", "run 1 finished; to train it further start a new run");
    refused("2", "run 2 (stopped) recorded no checkpoint");
    refused("3", "run 3 cannot be resumed: none of its 3 checkpoints can be read:");
    refused("3", "tiny-synthetic-epoch2.ckpt' is gone");
    refused("9", "there is no run 9 in the run store");
    refused("x", "option '--resume-run' takes a positive integer, got 'x'");
    const tr::test::ProcessRun both = cli({"train", tiny, "--resume-run", "4", "--store", store});
    QCOMPARE(both.code, 2);  // a project besides the run is a usage error
    const tr::test::ProcessRun mixed =
        cli({"train", "--resume-run", "4", "--resume", folder + "4/x.ckpt", "--store", store});
    QVERIFY2(mixed.out.contains("does not take '--resume'"), qPrintable(mixed.out));

    // Run 4's latest checkpoint is gone: the one before it is taken, and said so.
    const tr::test::ProcessRun r = cli({"train", "--resume-run", "4", "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains("tiny-synthetic-step25.ckpt' is gone; taking an earlier one"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("continuing run 4 in " + store + " from step 20"), qPrintable(r.out));
    const RunStore s(store.toStdString());
    QCOMPARE(s.run(4).summary.status, RunStatus::Finished);
    QCOMPARE(s.run(4).summary.steps, int64_t{25});
    QCOMPARE(s.step_curve(4).size(), size_t{25});
  }
};

QTEST_GUILESS_MAIN(TestRunResume)
#include "test_run_resume.moc"

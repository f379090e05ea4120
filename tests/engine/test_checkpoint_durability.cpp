// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoints survive the writer's death: a forked writer SIGKILLed at many
// points of writing a checkpoint over an earlier one leaves the earlier one
// (or, past the rename, the new one) whole and loadable under the final
// name, and the next write goes through. A checkpoint that cannot be written
// (the disk is full) fails with the system's reason, removes its temporary
// file and leaves the previous one; training reports it and goes on.
#include <QtTest>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/run_store.h>
#include "cli_process.h"

using namespace tr;

namespace {

// 32 MiB of tensor data: long enough to write that a kill lands inside it.
Checkpoint big_checkpoint(int64_t step, float value) {
  Checkpoint c;
  c.project_name = "durable";
  c.project_json = "{}";
  c.position = {step / 10, step % 10, step};
  c.seed = 7;
  c.global_batch = 64;
  c.optimizer = "sgd";
  c.precision = "fp32";
  c.updates = step;
  for (int i = 0; i < 8; ++i) {
    CheckpointTensor t;
    t.region = "W_LAYER";
    t.name = "layer" + std::to_string(i) + ".weight";
    t.shape = {1024, 1, 1, 1024};
    t.values.assign(static_cast<size_t>(t.shape.elements()), value + static_cast<float>(i));
    c.tensors.push_back(std::move(t));
  }
  return c;
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// The step of the whole checkpoint at `path`, or -1 (with the reason in `why`).
int64_t loadable_step(const std::string& path, QString* why) {
  try {
    const Checkpoint c = read_checkpoint(path);
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const float expect = (c.position.step == 1 ? 1.0f : 2.0f) + static_cast<float>(i);
      for (const float v : c.tensors[i].values)
        if (v != expect) {
          *why = "tensor " + QString::number(i) + " holds another checkpoint's values";
          return -1;
        }
    }
    return c.position.step;
  } catch (const std::exception& e) {
    *why = e.what();
    return -1;
  }
}

}  // namespace

class TestCheckpointDurability : public QObject {
  Q_OBJECT

 private slots:
  void aKilledWriterLeavesAWholeCheckpoint() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("durable.ckpt").toStdString();
    const std::string temporary = path + ".tmp";
    const Checkpoint before = big_checkpoint(1, 1.0f);
    const Checkpoint after = big_checkpoint(2, 2.0f);
    const int64_t whole = [&] {
      write_checkpoint(after, path);
      const int64_t bytes = file_size(path);
      write_checkpoint(before, path);
      return bytes;
    }();
    QVERIFY(whole > 32 << 20);

    // Kill points: as soon as the temporary file exists, at every 5% of
    // its bytes, once it is complete (syncing or renaming), and at fixed
    // times after the fork.
    std::vector<double> fractions{0.0};
    for (int k = 1; k <= 20; ++k) fractions.push_back(k / 20.0);
    std::vector<int> delays_us{0, 100, 300, 1000, 3000, 10000, 30000, 100000};
    int kills = 0, old_kept = 0, new_in_place = 0, finished_first = 0;
    const size_t points = fractions.size() + delays_us.size();
    for (size_t point = 0; point < points; ++point) {
      write_checkpoint(before, path);
      const pid_t child = ::fork();
      QVERIFY(child >= 0);
      if (child == 0) {
        try {
          write_checkpoint(after, path);
        } catch (...) {
          ::_exit(2);
        }
        ::_exit(0);
      }
      if (point < fractions.size()) {
        const auto target = static_cast<int64_t>(fractions[point] * static_cast<double>(whole));
        for (int spin = 0; spin < 2'000'000; ++spin) {
          const int64_t n = file_size(temporary);
          if (n >= target && n >= 0) break;
          int status = 0;
          if (::waitpid(child, &status, WNOHANG) == child) break;  // done already
          std::this_thread::yield();
        }
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(delays_us[point - fractions.size()]));
      }
      ::kill(child, SIGKILL);
      int status = 0;
      QCOMPARE(::waitpid(child, &status, 0), child);
      if (WIFSIGNALED(status))
        ++kills;
      else
        ++finished_first;
      QString why;
      const int64_t step = loadable_step(path, &why);
      QVERIFY2(step == 1 || step == 2,
               qPrintable(QString("kill point %1: %2").arg(point).arg(why)));
      (step == 1 ? old_kept : new_in_place)++;
    }
    qInfo(
        "%zu kill points: %d writers killed (%d left the previous checkpoint, %d the new one "
        "already in place), %d finished before the kill",
        points, kills, old_kept, new_in_place, finished_first);
    QVERIFY2(old_kept >= 16, "too few kills landed inside the write to prove anything");
    // Whatever was left behind, the next write goes through.
    write_checkpoint(after, path);
    QString why;
    QCOMPARE(loadable_step(path, &why), int64_t{2});
    QVERIFY(!QFile::exists(QString::fromStdString(temporary)));
  }

  void aFullDiskFailsWithTheReasonAndKeepsThePrevious() {
    if (!QFile::exists("/dev/full")) QSKIP("this system has no /dev/full");
    QTemporaryDir dir;
    const std::string path = dir.filePath("full.ckpt").toStdString();
    write_checkpoint(big_checkpoint(1, 1.0f), path);
    // Writes through the temporary name land on /dev/full: ENOSPC, as on a full disk.
    QVERIFY(QFile::link("/dev/full", QString::fromStdString(path + ".tmp")));
    try {
      write_checkpoint(big_checkpoint(2, 2.0f), path);
      QFAIL("a checkpoint on a full disk was reported as written");
    } catch (const UsageError& e) {
      const QString m = e.what();
      QVERIFY2(m.contains(QString::fromStdString(path)) && m.contains("No space left on device"),
               qPrintable(m));
    }
    QVERIFY(!QFileInfo::exists(QString::fromStdString(path + ".tmp")));
    QString why;
    QCOMPARE(loadable_step(path, &why), int64_t{1});
  }

  void trainingGoesOnPastACheckpointThatCannotBeWritten() {
    if (!QFile::exists("/dev/full")) QSKIP("this system has no /dev/full");
    QTemporaryDir dir;
    const QString folder = dir.filePath("ckpt");
    const QString store = dir.filePath("runs.sqlite");
    QVERIFY(QDir().mkpath(folder));
    // The first epoch's checkpoint meets a full disk; the second's does not.
    QVERIFY(QFile::link("/dev/full", folder + "/tiny-synthetic-epoch1.ckpt.tmp"));
    const tr::test::ProcessRun r = tr::test::run_process(
        QStringLiteral(TR_CLI),
        {"train", QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json", "--store", store,
         "--checkpoint-dir", folder, "--no-validation"});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains("warning: checkpoint '" + folder +
                            "/tiny-synthetic-epoch1.ckpt': cannot write '" + folder +
                            "/tiny-synthetic-epoch1.ckpt.tmp': No space left on device; "
                            "training goes on"),
             qPrintable(r.out));
    QVERIFY2(r.out.contains("epoch 2/2"), qPrintable(r.out));
    QVERIFY(!QFile::exists(folder + "/tiny-synthetic-epoch1.ckpt"));
    QVERIFY(QFile::exists(folder + "/tiny-synthetic-epoch2.ckpt"));
    const store::RunStore s(store.toStdString());
    QCOMPARE(s.run(1).summary.status, store::RunStatus::Finished);
    const auto checkpoints = s.checkpoints(1);
    QCOMPARE(checkpoints.size(), size_t{1});  // only what was written
    QCOMPARE(QString::fromStdString(checkpoints[0].path), folder + "/tiny-synthetic-epoch2.ckpt");
  }
};

QTEST_GUILESS_MAIN(TestCheckpointDurability)
#include "test_checkpoint_durability.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// The run store's faults lose nothing: writes and syncs made to fail (an
// SQLite VFS that fails them after N calls, for many N), a lock held past
// the busy timeout, the store file deleted mid-run, a store on a tiny file
// system that fills up, and a read-only store. Training goes on, the rows
// wait in memory and go in once the store takes them, what was committed
// stays committed, and the user is told once.
#include <QtTest>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include <renaissance/project_io.h>
#include <renaissance/run_recorder.h>
#include <renaissance/training_job.h>
#include <renaissance/training_recorder.h>
#include "cli_process.h"
#include "faulty_vfs.h"

using namespace tr;
using namespace tr::store;

namespace {

RunStart start_of(const std::string& name) {
  RunStart s;
  s.name = name;
  s.project_json = R"({"format":1,"name":")" + name + R"(","model":{"nodes":[]}})";
  s.hyper_json = "{}";
  s.devices = "cpu:1";
  s.precision = "fp32";
  return s;
}

StepRecord step_of(int64_t i) {
  StepRecord s;
  s.step = i;
  s.epoch = i / 300;
  s.loss = 1.0 / static_cast<double>(i + 1);
  s.lr = 0.1;
  return s;
}

std::string sql_text(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return out;
}

struct Told {
  std::mutex mutex;
  std::vector<std::string> trouble, recovered;
  RecorderOptions options(std::chrono::milliseconds flush = std::chrono::milliseconds(2)) {
    RecorderOptions o;
    o.flush_interval = flush;
    o.batch_rows = 64;
    o.finish_timeout = std::chrono::milliseconds(3000);
    o.busy_timeout = std::chrono::milliseconds(20);
    o.on_trouble = [this](const std::string& t) {
      std::lock_guard<std::mutex> lock(mutex);
      trouble.push_back(t);
    };
    o.on_recovered = [this](const std::string& t) {
      std::lock_guard<std::mutex> lock(mutex);
      recovered.push_back(t);
    };
    return o;
  }
};

constexpr int64_t kSteps = 1500;

// What a run of kSteps steps (5 epochs, 3 checkpoints) left in the store.
void check_whole_run(const std::string& path, int64_t run) {
  const RunStore s(path);
  QCOMPARE(s.run(run).summary.status, RunStatus::Finished);
  const auto steps = s.step_curve(run);
  QCOMPARE(static_cast<int64_t>(steps.size()), kSteps);
  for (int64_t i = 0; i < kSteps; ++i) QCOMPARE(steps[static_cast<size_t>(i)].step, i);
  QCOMPARE(s.epochs(run).size(), size_t{5});
  QCOMPARE(s.checkpoints(run).size(), size_t{3});
  QCOMPARE(sql_text(path, "PRAGMA integrity_check"), std::string("ok"));
}

// Pushes a run as a trainer would, a step every 50 us.
void push_run(RunRecorder& rec) {
  for (int64_t i = 0; i < kSteps; ++i) {
    rec.push_step(step_of(i));
    if ((i + 1) % 300 == 0) {
      EpochRecord e;
      e.epoch = i / 300;
      e.train_loss = 1.0 / static_cast<double>(i);
      rec.push_epoch(e);
    }
    if ((i + 1) % 500 == 0) {
      CheckpointRecord c;
      c.path = "/ckpt/x-step" + std::to_string(i + 1) + ".ckpt";
      c.step = i + 1;
      rec.push_checkpoint(c);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

class TestStoreFaults : public QObject {
  Q_OBJECT

 private slots:
  void failedWritesAndSyncsLoseNoRow() {
    test::FaultyVfs vfs;
    QTemporaryDir dir;
    int64_t tried = 0, failures = 0, steps = 0, refused = 0, points = 0;
    const int64_t lengths[] = {1, 7, 40, 400};
    for (int64_t n = 0; n <= 120; n += n < 16 ? 1 : 8) {
      const std::string path = dir.filePath(QString("faults-%1.sqlite").arg(n)).toStdString();
      Told told;
      int64_t run = 0;
      {
        RunRecorder rec(path, start_of("faults"), told.options());
        run = rec.run_id();
        const int64_t before = vfs.failures();
        vfs.fail_after(n, lengths[n % 4]);
        push_run(rec);
        vfs.heal();
        QVERIFY2(rec.finish(RunStatus::Finished).empty(), rec.error().c_str());
        const RecorderStats st = rec.stats();
        failures += vfs.failures() - before;
        refused += st.failed_commits;
        steps += kSteps;
        ++points;
        QCOMPARE(st.dropped_rows, int64_t{0});
        QVERIFY(told.trouble.size() <= 1);  // told once, not at every retry
        QCOMPARE(told.trouble.empty(), st.failed_commits == 0);
        if (!told.trouble.empty())
          QVERIFY2(told.trouble[0].find("training goes on") != std::string::npos,
                   told.trouble[0].c_str());
      }
      tried += vfs.calls();
      check_whole_run(path, run);
    }
    qInfo(
        "%lld fault points: %lld write/sync calls failed, %lld commits refused, %lld steps "
        "recorded through them, 0 rows lost",
        static_cast<long long>(points), static_cast<long long>(failures),
        static_cast<long long>(refused), static_cast<long long>(steps));
    QVERIFY(failures > 100);
    QVERIFY(refused > 10);
    (void)tried;
  }

  void failedSyncsKeepWhatWasCommitted() {
    test::FaultyVfs vfs;
    QTemporaryDir dir;
    const std::string path = dir.filePath("syncs.sqlite").toStdString();
    Told told;
    int64_t run = 0;
    {
      RunRecorder rec(path, start_of("syncs"), told.options());
      run = rec.run_id();
      // Every sync fails: the WAL's checkpoints into the database (the one
      // on closing too) cannot complete, but every commit stands.
      vfs.fail_after(0, std::numeric_limits<int64_t>::max(), test::FaultyVfs::Calls::Syncs);
      push_run(rec);
      QVERIFY(rec.finish(RunStatus::Finished).empty());
    }
    const int64_t failed = vfs.failures();
    vfs.heal();
    qInfo("%lld syncs failed", static_cast<long long>(failed));
    QVERIFY(failed > 0);
    check_whole_run(path, run);
  }

  void trainingGoesOnThroughStoreFaults() {
    test::FaultyVfs vfs;
    QTemporaryDir dir;
    const std::string path = dir.filePath("training.sqlite").toStdString();
    Project p = load_project(TR_TEST_DATA "/projects/tiny-synthetic.json");
    p.training.epochs = 6;
    TrainingJob job(p);
    TrainOptions o;
    o.validate = false;
    Told told;
    TrainingRecorder rec(path, job.plan(), job.context(), o, told.options());
    TrainCallbacks cb;
    rec.attach(cb);
    // The store refuses every write from step 5 to step 40.
    cb.on_step = [&, recorded = cb.on_step](const StepReport& s) {
      recorded(s);
      if (s.step == 5) vfs.fail_after(0);
      if (s.step == 40) vfs.heal();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    };
    const TrainReport report = job.train(o, cb);
    QVERIFY(vfs.failures() > 0);
    QVERIFY2(rec.ended(report).empty(), "rows were lost");
    const RunStore s(path);
    QCOMPARE(static_cast<int64_t>(s.step_curve(rec.run_id()).size()), report.steps);
    QCOMPARE(s.epochs(rec.run_id()).size(), size_t{6});
    QCOMPARE(told.trouble.size(), size_t{1});
    QCOMPARE(told.recovered.size(), size_t{1});
    QVERIFY2(told.recovered[0].find("takes writes again") != std::string::npos,
             told.recovered[0].c_str());
  }

  void aLockHeldPastTheBusyTimeout() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("locked.sqlite").toStdString();
    Told told;
    RunRecorder rec(path, start_of("locked"), told.options());
    sqlite3* other = nullptr;
    QCOMPARE(sqlite3_open(path.c_str(), &other), SQLITE_OK);
    for (int64_t i = 0; i < 100; ++i) rec.push_step(step_of(i));
    QVERIFY(rec.flush());
    QCOMPARE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
    for (int64_t i = 100; i < 200; ++i) rec.push_step(step_of(i));
    QVERIFY(!rec.flush());
    QVERIFY2(rec.error().find("locked") != std::string::npos, rec.error().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ten busy timeouts
    QCOMPARE(sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(other);
    for (int64_t i = 200; i < 300; ++i) rec.push_step(step_of(i));
    QVERIFY(rec.flush());
    QVERIFY(rec.finish(RunStatus::Finished).empty());
    QCOMPARE(RunStore(path).step_curve(rec.run_id()).size(), size_t{300});
    QCOMPARE(told.trouble.size(), size_t{1});
    QCOMPARE(told.recovered.size(), size_t{1});
  }

  void aDeletedStoreIsWrittenBack() {
    for (const bool all_files : {false, true}) {
      QTemporaryDir dir;
      const std::string path = dir.filePath("deleted.sqlite").toStdString();
      int64_t earlier = 0;
      {
        RunStore s(path);
        earlier = s.begin_run(start_of("earlier"));
        s.end_run(earlier, RunStatus::Finished);
      }
      Told told;
      RunRecorder rec(path, start_of("deleted"), told.options());
      for (int64_t i = 0; i < 100; ++i) rec.push_step(step_of(i));
      QVERIFY(rec.flush());
      std::filesystem::remove(path);
      if (all_files)
        for (const char* s : {"-wal", "-shm"}) std::filesystem::remove(path + s);
      for (int64_t i = 100; i < 200; ++i) rec.push_step(step_of(i));
      QVERIFY(rec.flush());
      QVERIFY(rec.finish(RunStatus::Finished).empty());
      QVERIFY2(std::filesystem::exists(path),
               told.trouble.empty() ? "not told" : told.trouble[0].c_str());
      const RunStore s(path);
      QCOMPARE(s.step_curve(rec.run_id()).size(), size_t{200});
      QCOMPARE(s.run(rec.run_id()).summary.status, RunStatus::Finished);
      QVERIFY(s.has_run(earlier));  // everything it held, not only this run
      QCOMPARE(told.trouble.size(), size_t{1});
      QVERIFY2(told.trouble[0].find("was deleted") != std::string::npos &&
                   told.trouble[0].find("written back to '" + path + "'") != std::string::npos,
               told.trouble[0].c_str());
    }
  }

  // A real full file system: an 8 MiB tmpfs in a private mount namespace
  // (unshare), filled up while the CLI trains with its store and its
  // checkpoints there, held full, then freed.
  void aTinyFileSystemThatFillsUp() {
    if (test::run_process("unshare", {"-rm", "true"}).code != 0)
      QSKIP("no private mount namespace here (unshare -rm), so no tiny file system to fill");
    QTemporaryDir dir;
    const QString mnt = dir.filePath("tiny");
    QVERIFY(QDir().mkpath(mnt));
    // 1000 steps an epoch: three epochs, three checkpoints.
    const QString project = test::tiny_synthetic(dir.path(), "long.json", 64000);
    QVERIFY(!project.isEmpty());
    // Full from the first checkpoint until both the store and a checkpoint
    // have met it (a minute at most), then freed.
    const QString script = QString::fromLatin1(
        "set -e\n"
        "mount -t tmpfs -o size=8m none \"$1\"\n"
        "\"$2\" train \"$3\" --epochs 3 --store \"$1/runs.sqlite\" --checkpoint-dir \"$1/ckpt\" "
        "--no-validation > \"$4/out.txt\" 2>&1 &\n"
        "pid=$!\n"
        "while [ ! -s \"$1/ckpt/tiny-synthetic-epoch1.ckpt\" ]; do sleep 0.01; done\n"
        "dd if=/dev/zero of=\"$1/fill\" bs=4k 2>/dev/null || true\n"
        "for i in $(seq 1200); do\n"
        "  if grep -q 'No space left' \"$4/out.txt\" && grep -q 'does not take writes' "
        "\"$4/out.txt\"; then break; fi\n"
        "  sleep 0.05\n"
        "done\n"
        "rm -f \"$1/fill\"\n"
        "status=0\n"
        "wait $pid || status=$?\n"
        "echo \"exit $status\" >> \"$4/out.txt\"\n"
        "\"$2\" runs list --json --store \"$1/runs.sqlite\" > \"$4/runs.json\"\n");
    const test::ProcessRun r = test::run_process(
        "unshare", {"-rm", "sh", "-c", script, "sh", mnt, TR_CLI, project, dir.path()});
    QFile outFile(dir.filePath("out.txt"));
    QVERIFY2(outFile.open(QIODevice::ReadOnly), qPrintable(r.out));
    const QString out = QString::fromUtf8(outFile.readAll());
    QVERIFY2(r.code == 0 && out.contains("exit 0"), qPrintable(r.out + out));
    // Told once of each; the rows waited and went in.
    QCOMPARE(out.count("warning: the run store does not take writes"), 1);
    QVERIFY2(out.contains("database or disk is full") &&
                 out.contains("training goes on and its rows wait in memory"),
             qPrintable(out));
    QCOMPARE(out.count("takes writes again"), 1);
    QVERIFY2(out.contains("No space left on device; training goes on"), qPrintable(out));
    QVERIFY2(out.contains("epoch 3/3"), qPrintable(out));
    QFile runsFile(dir.filePath("runs.json"));
    QVERIFY(runsFile.open(QIODevice::ReadOnly));
    const QByteArray runs = runsFile.readAll();
    QVERIFY2(runs.contains("\"steps\": 3000") || runs.contains("\"steps\":3000"), runs.constData());
    QVERIFY2(runs.contains("\"status\": \"finished\"") || runs.contains("\"status\":\"finished\""),
             runs.constData());
  }

  // A store the user cannot write: refused before training, with the file
  // named, and left byte for byte as it was (no -wal or -shm beside it).
  void aReadOnlyStoreIsRefusedUntouched() {
    QTemporaryDir dir;
    QFile::setPermissions(dir.path(), QFileDevice::Permissions(0x7777));
    const QString store = dir.filePath("readonly.sqlite");
    const QString tiny = QStringLiteral(TR_TEST_DATA "/projects/tiny-synthetic.json");
    QCOMPARE(test::run_process(TR_CLI, {"train", tiny, "--store", store, "--max-steps", "2"}).code,
             0);
    QVERIFY(QFile::setPermissions(
        store, QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther));
    QFile f(store);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray before = f.readAll();
    f.close();
    // Root writes anything: the refusal is shown as another user.
    QStringList cmd{TR_CLI, "train", tiny, "--store", store, "--max-steps", "2"};
    if (::geteuid() == 0) {
      if (test::run_process("setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups", "true"})
              .code != 0)
        QSKIP("running as root without setpriv: a read-only file is writable to root");
      cmd = QStringList{"--reuid=65534", "--regid=65534", "--clear-groups"} + cmd;
    }
    const test::ProcessRun r = test::run_process(::geteuid() == 0 ? "setpriv" : TR_CLI,
                                                 ::geteuid() == 0 ? cmd : cmd.mid(1));
    QVERIFY2(r.code == 1, qPrintable(r.out));
    QVERIFY2(r.out.contains("the run store '" + store + "' is read-only"), qPrintable(r.out));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), before);
    QVERIFY(!QFile::exists(store + "-wal"));
    QVERIFY(!QFile::exists(store + "-shm"));
  }
};

QTEST_GUILESS_MAIN(TestStoreFaults)
#include "test_store_faults.moc"

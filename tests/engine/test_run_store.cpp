// SPDX-License-Identifier: GPL-3.0-or-later
// The run store against real SQLite files: recording, migrations from
// hand-built older schemas, refusal of newer and foreign files (left
// byte-identical), a writer killed with SIGKILL, a reader while a writer
// commits, the CSV export read back, and the dead-writer check.
#include <QtTest>

#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <renaissance/run_compare.h>
#include <renaissance/run_export.h>
#include <renaissance/run_recorder.h>
#include <renaissance/run_store.h>
#include <renaissance/store_location.h>
#include "store/process_identity.h"
#include "store/schema.h"

using namespace tr::store;

namespace {

std::string path_in(const QTemporaryDir& dir, const char* name) {
  return dir.filePath(name).toStdString();
}

RunStart start_of(const std::string& name, uint64_t seed = 7, double lr = 0.05) {
  RunStart s;
  s.name = name;
  s.project_json = R"({"format":1,"name":")" + name + R"(","model":{"nodes":[]}})";
  s.hyper_json = R"({"optimizer":{"type":"sgd","lr":)" + std::to_string(lr) +
                 R"(},"epochs":2,"seed":)" + std::to_string(seed) + "}";
  s.devices = "cpu:1";
  s.world_size = 1;
  s.precision = "fp32";
  s.seed = seed;
  return s;
}

StepRecord step_of(int64_t i, int64_t per_epoch = 10) {
  StepRecord s;
  s.step = i;
  s.epoch = i / per_epoch;
  s.loss = 2.0 / static_cast<double>(i + 1) + 1.0 / 3.0;
  s.top1 = static_cast<double>(i % 7) / 7.0;
  s.lr = 0.1 * std::cos(static_cast<double>(i) * 0.01);
  s.images_per_s = 1000.0 + static_cast<double>(i) / 9.0;
  return s;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

// Raw SQL on a file, as another tool (or an older Renaissance) would write it.
void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  QVERIFY2(rc == SQLITE_OK, msg.c_str());
}

std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

// Schema version 1 as released, written by hand so that a change to the
// engine's migration script cannot silently change what "version 1" means.
const char* kVersion1 = R"sql(
PRAGMA application_id = 1382963042;  -- "RnWb"
CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running','finished','stopped','failed','interrupted')),
  started_at REAL NOT NULL, ended_at REAL, updated_at REAL NOT NULL, devices TEXT NOT NULL,
  world_size INTEGER NOT NULL, precision TEXT NOT NULL, seed INTEGER NOT NULL,
  engine_version TEXT NOT NULL, git_commit TEXT NOT NULL, writer_host TEXT NOT NULL,
  writer_pid INTEGER NOT NULL, writer_start TEXT NOT NULL, error TEXT,
  steps INTEGER NOT NULL DEFAULT 0, epochs INTEGER NOT NULL DEFAULT 0,
  final_train_loss REAL, final_train_top1 REAL, final_val_loss REAL, final_val_top1 REAL,
  final_val_top5 REAL);
CREATE INDEX runs_by_status ON runs(status);
CREATE TABLE run_configs (run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  hyper_json TEXT NOT NULL, project_json TEXT NOT NULL);
CREATE TABLE step_metrics (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL, epoch INTEGER NOT NULL, loss REAL, top1 REAL, lr REAL,
  images_per_s REAL, PRIMARY KEY (run_id, step)) WITHOUT ROWID;
CREATE TABLE epoch_metrics (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  epoch INTEGER NOT NULL, train_loss REAL, train_top1 REAL, val_loss REAL, val_top1 REAL,
  val_top5 REAL, images_per_s REAL, seconds REAL, ended_at REAL,
  PRIMARY KEY (run_id, epoch)) WITHOUT ROWID;
INSERT INTO runs VALUES (1, 'old-run', 'finished', 1700000000, 1700000100, 1700000100, 'cpu:2',
  2, 'fp32', 11, '0.0.9', 'abc1234', 'elsewhere', 4242, 'x/1', NULL, 3, 1, 0.5, 0.8, 0.6, 0.75,
  0.95);
INSERT INTO run_configs VALUES (1, '{"epochs":1}', '{"format":1,"name":"old-run"}');
INSERT INTO step_metrics VALUES (1, 0, 0, 2.5, 0.1, 0.05, 900), (1, 1, 0, 1.5, 0.4, 0.05, 950),
  (1, 2, 0, 0.5, 0.8, 0.04, 1000);
INSERT INTO epoch_metrics VALUES (1, 0, 0.5, 0.8, 0.6, 0.75, 0.95, 980, 3.5, 1700000100);
PRAGMA user_version = 1;
)sql";

// What version 2 added on top of version 1.
const char* kVersion2 = R"sql(
CREATE TABLE checkpoints (id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, path TEXT NOT NULL,
  epoch INTEGER, step INTEGER, metrics_json TEXT, created_at REAL NOT NULL);
CREATE INDEX checkpoints_by_run ON checkpoints(run_id);
CREATE TABLE tags (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL, PRIMARY KEY (run_id, tag)) WITHOUT ROWID;
CREATE TABLE notes (id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, text TEXT NOT NULL,
  created_at REAL NOT NULL);
CREATE INDEX notes_by_run ON notes(run_id);
INSERT INTO tags VALUES (1, 'legacy');
INSERT INTO notes VALUES (1, 1, 'kept across the upgrade', 1700000200);
INSERT INTO checkpoints VALUES (1, 1, '/ckpt/old-epoch1.ckpt', 1, NULL, '{"val_top1":0.75}',
  1700000150);
PRAGMA user_version = 2;
)sql";

void check_old_run(const RunStore& s) {
  const RunDetail d = s.run(1);
  QCOMPARE(d.summary.name, std::string("old-run"));
  QCOMPARE(d.summary.status, RunStatus::Finished);
  QCOMPARE(d.summary.devices, std::string("cpu:2"));
  QCOMPARE(d.summary.world_size, 2);
  QCOMPARE(d.summary.seed, uint64_t{11});
  QCOMPARE(d.git_commit, std::string("abc1234"));
  QCOMPARE(d.project_json, std::string(R"({"format":1,"name":"old-run"})"));
  QCOMPARE(d.summary.final_val_top1.value_or(-1), 0.75);
  const auto curve = s.step_curve(1);
  QCOMPARE(curve.size(), size_t{3});
  QCOMPARE(curve[1].loss, 1.5);
  QCOMPARE(curve[2].lr, 0.04);
  QVERIFY(!curve[0].loss_scale);  // the column came with version 3
  const auto epochs = s.epochs(1);
  QCOMPARE(epochs.size(), size_t{1});
  QCOMPARE(epochs[0].val_top5.value_or(-1), 0.95);
  QVERIFY(epochs[0].confusion.empty());
  QVERIFY(epochs[0].per_class_accuracy.empty());
}

// Parses the export back: header, then per row the columns by name
// (absent value: nullopt).
struct CsvRow {
  std::map<std::string, std::optional<double>> num;
  std::string kind;
};

std::vector<CsvRow> parse_csv(const std::string& text, std::vector<std::string>& header) {
  std::istringstream in(text);
  std::string line;
  std::vector<CsvRow> rows;
  const auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    size_t start = 0;
    for (;;) {
      const size_t comma = l.find(',', start);
      cells.push_back(l.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return cells;
  };
  std::getline(in, line);
  header = split(line);
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() != header.size()) return {};
    CsvRow r;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (header[c] == "kind") {
        r.kind = cells[c];
      } else if (!cells[c].empty()) {
        char* end = nullptr;
        r.num[header[c]] = std::strtod(cells[c].c_str(), &end);
        if (*end != '\0') return {};
      } else {
        r.num[header[c]] = std::nullopt;
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

bool wait_readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, ms) == 1;
}

}  // namespace

class TestRunStore : public QObject {
  Q_OBJECT

 private slots:
  void recordsARunInNewFolders() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "deep/er/runs.sqlite");
    int64_t id = 0;
    {
      RunRecorder rec(path, start_of("lenet"));
      id = rec.run_id();
      for (int64_t i = 0; i < 25; ++i) rec.push_step(step_of(i));
      EpochRecord e0;
      e0.epoch = 0;
      e0.train_loss = 0.7;
      e0.train_top1 = 0.6;
      e0.val_loss = 0.5;
      e0.val_top1 = 0.8;
      e0.val_top5 = 0.99;
      e0.images_per_s = 1234.5;
      e0.seconds = 1.25;
      e0.confusion = {8, 2, 0, 1, 9, 0, 0, 5, 0};  // 3 classes; none of class 2 right
      e0.steps = e0.batches = 10;
      rec.push_epoch(e0);
      EpochRecord e1;  // stopped before validation, after 5 of its 10 steps
      e1.epoch = 1;
      e1.train_loss = 0.4;
      e1.train_top1 = 0.7;
      e1.steps = 5;
      e1.batches = 10;
      rec.push_epoch(e1);
      QCOMPARE(rec.finish(RunStatus::Stopped), std::string());
    }
    const RunStore s(path);
    QCOMPARE(s.schema_version(), kStoreSchemaVersion);
    QCOMPARE(raw_text(path, "PRAGMA journal_mode"), std::string("wal"));
    const auto runs = s.list_runs();
    QCOMPARE(runs.size(), size_t{1});
    const RunSummary& r = runs[0];
    QCOMPARE(r.id, id);
    QCOMPARE(r.status, RunStatus::Stopped);
    QCOMPARE(r.steps, int64_t{25});
    // Whole epochs only: the second was cut short, and the final training
    // figures are the whole epoch's, not those of its 5 steps.
    QCOMPARE(r.epochs, int64_t{1});
    QVERIFY(r.ended_at && *r.ended_at >= r.started_at);
    QCOMPARE(r.final_train_loss.value_or(-1), 0.7);
    QCOMPARE(r.final_train_top1.value_or(-1), 0.6);
    // The last epoch was not validated: the final validation figures are the last ones measured.
    QCOMPARE(r.final_val_top1.value_or(-1), 0.8);
    const RunDetail d = s.run(id);
    QCOMPARE(d.engine_version, std::string(TR_VERSION));
    QVERIFY(!d.git_commit.empty());
    QCOMPARE(d.writer_pid, static_cast<int64_t>(getpid()));
    QVERIFY(d.hyper_json.find("\"lr\"") != std::string::npos);
    QVERIFY(d.error.empty());

    const auto curve = s.step_curve(id);
    QCOMPARE(curve.size(), size_t{25});
    for (int64_t i = 0; i < 25; ++i) {
      const StepRecord want = step_of(i);
      QCOMPARE(curve[static_cast<size_t>(i)].step, i);
      QCOMPARE(curve[static_cast<size_t>(i)].epoch, want.epoch);
      QCOMPARE(curve[static_cast<size_t>(i)].loss, want.loss);  // exact: REAL is a double
      QCOMPARE(curve[static_cast<size_t>(i)].lr, want.lr);
      QCOMPARE(curve[static_cast<size_t>(i)].images_per_s, want.images_per_s);
      QVERIFY(!curve[static_cast<size_t>(i)].loss_scale);
    }
    const auto epochs = s.epochs(id);
    QCOMPARE(epochs.size(), size_t{2});
    QCOMPARE(epochs[0].confusion, (std::vector<int64_t>{8, 2, 0, 1, 9, 0, 0, 5, 0}));
    QCOMPARE(epochs[0].per_class_accuracy.size(), size_t{3});
    QCOMPARE(epochs[0].per_class_accuracy[0], 0.8);
    QCOMPARE(epochs[0].per_class_accuracy[1], 0.9);
    QCOMPARE(epochs[0].per_class_accuracy[2], 0.0);
    QVERIFY(epochs[0].ended_at > 0);
    QVERIFY(!epochs[1].val_loss && !epochs[1].val_top1 && !epochs[1].val_top5);
    QVERIFY(epochs[1].confusion.empty());
    QVERIFY(!epochs[0].partial() && epochs[1].partial());
    QCOMPARE(epochs[1].steps, int64_t{5});
    QCOMPARE(epochs[1].batches, int64_t{10});
  }

  // A run stopped inside its first epoch has no whole epoch: it counts 0,
  // and its final training figures are the cut-short epoch's, the only ones.
  void aRunStoppedInItsFirstEpochHasNoWholeEpoch() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "runs.sqlite");
    int64_t id = 0;
    {
      RunRecorder rec(path, start_of("lenet"));
      id = rec.run_id();
      for (int64_t i = 0; i < 3; ++i) rec.push_step(step_of(i));
      EpochRecord e;
      e.train_loss = 1.5;
      e.steps = 3;
      e.batches = 10;
      rec.push_epoch(e);
      QCOMPARE(rec.finish(RunStatus::Stopped), std::string());
    }
    const RunStore s(path);
    const RunSummary r = s.run(id).summary;
    QCOMPARE(r.epochs, int64_t{0});
    QCOMPARE(r.final_train_loss.value_or(-1), 1.5);
    QVERIFY(s.epochs(id).at(0).partial());
  }

  void migratesFromVersion1() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "v1.sqlite");
    raw_sql(path, kVersion1);
    {
      RunStore s(path);
      QCOMPARE(s.opened_version(), 1);
      QCOMPARE(s.schema_version(), kStoreSchemaVersion);
      check_old_run(s);
      // Everything the later versions brought works on the migrated file.
      s.add_tag(1, "migrated");
      s.add_note(1, "from version 1");
      CheckpointRecord c;
      c.path = "/tmp/x.ckpt";
      c.epoch = 1;
      s.add_checkpoint(1, c);
      StepRecord st = step_of(3);
      st.loss_scale = 1024.0;
      s.append(1, std::vector<StepRecord>{st}, {});
      EpochRecord e;
      e.epoch = 1;
      e.confusion = {3, 1, 0, 4};
      s.append(1, {}, std::vector<EpochRecord>{e});
    }
    const RunStore again(path);
    QCOMPARE(again.opened_version(), kStoreSchemaVersion);  // migrated once only
    QCOMPARE(again.tags(1), std::vector<std::string>{"migrated"});
    QCOMPARE(again.notes(1).size(), size_t{1});
    QCOMPARE(again.checkpoints(1).size(), size_t{1});
    QCOMPARE(again.step_curve(1).back().loss_scale.value_or(-1), 1024.0);
    QCOMPARE(again.epochs(1).back().per_class_accuracy, (std::vector<double>{0.75, 1.0}));
    QCOMPARE(again.run(1).summary.steps, int64_t{4});
    // An epoch recorded before the store kept step counts was a whole one.
    QVERIFY(!again.epochs(1).front().partial());
    QCOMPARE(again.run(1).summary.epochs, int64_t{2});
  }

  void migratesFromVersion2() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "v2.sqlite");
    raw_sql(path, std::string(kVersion1) + kVersion2);
    const RunStore s(path);
    QCOMPARE(s.opened_version(), 2);
    QCOMPARE(s.schema_version(), kStoreSchemaVersion);
    check_old_run(s);
    QCOMPARE(s.tags(1), std::vector<std::string>{"legacy"});
    QCOMPARE(s.notes(1).at(0).text, std::string("kept across the upgrade"));
    const auto ck = s.checkpoints(1);
    QCOMPARE(ck.size(), size_t{1});
    QCOMPARE(ck[0].path, std::string("/ckpt/old-epoch1.ckpt"));
    QCOMPARE(ck[0].epoch.value_or(-1), int64_t{1});
    QVERIFY(!ck[0].step);
    QCOMPARE(s.list_runs("legacy").size(), size_t{1});
  }

  void refusesANewerSchemaAndLeavesItUntouched() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "newer.sqlite");
    { RunRecorder(path, start_of("a")).finish(RunStatus::Finished); }
    raw_sql(path, "PRAGMA user_version = " + std::to_string(kStoreSchemaVersion + 1));
    const std::string before = file_bytes(path);
    QVERIFY(before.size() > 1000);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        if (attempt == 0)
          RunStore s(path);
        else
          RunRecorder rec(path, start_of("b"));
        QFAIL("a newer store was opened");
      } catch (const StoreError& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("newer version") != std::string::npos, e.what());
        QVERIFY2(msg.find("schema version " + std::to_string(kStoreSchemaVersion + 1)) !=
                     std::string::npos,
                 e.what());
        QVERIFY2(msg.find(path) != std::string::npos, e.what());
      }
    }
    QCOMPARE(file_bytes(path), before);
    QCOMPARE(raw_text(path, "SELECT count(*) FROM runs"), std::string("1"));
  }

  void refusesFilesThatAreNotStores() {
    QTemporaryDir dir;
    std::mt19937 rng(5);
    std::string noise(8192, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    const std::vector<std::pair<std::string, std::string>> files{
        {"notes.txt", "these are my notes, not a database\n"},
        {"noise.bin", noise},
        {"header-only.bin", std::string("SQLite format 3") + '\0' + noise}};
    for (const auto& [name, bytes] : files) {
      const std::string path = path_in(dir, name.c_str());
      write_bytes(path, bytes);
      try {
        RunStore s(path);
        QFAIL(("opened " + name).c_str());
      } catch (const StoreError& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.find("not a run store") != std::string::npos ||
                     msg.find("not a usable run store") != std::string::npos,
                 e.what());
        QVERIFY2(msg.find(path) != std::string::npos, e.what());
        QVERIFY2(std::string(e.what()).find("left untouched") != std::string::npos, e.what());
      }
      QVERIFY2(file_bytes(path) == bytes, name.c_str());
    }
    // Another program's SQLite database.
    const std::string other = path_in(dir, "other.sqlite");
    raw_sql(other, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada');");
    const std::string before = file_bytes(other);
    QVERIFY_THROWS_EXCEPTION(StoreError, RunStore{other});
    try {
      RunStore s(other);
    } catch (const StoreError& e) {
      QVERIFY2(
          std::string(e.what()).find("SQLite database but not a run store") != std::string::npos,
          e.what());
    }
    QCOMPARE(file_bytes(other), before);
    // A folder.
    QVERIFY_THROWS_EXCEPTION(StoreError, RunStore{dir.path().toStdString()});
  }

  void emptyFileBecomesAStore() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "empty.sqlite");
    write_bytes(path, "");
    RunStore s(path);
    QCOMPARE(s.opened_version(), 0);
    QCOMPARE(s.schema_version(), kStoreSchemaVersion);
    QVERIFY(s.list_runs().empty());
  }

  void sigkilledWriterLeavesAnInterruptedRun() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "killed.sqlite");
    int fds[2];
    QCOMPARE(pipe(fds), 0);
    const pid_t child = fork();
    QVERIFY(child >= 0);
    if (child == 0) {
      // The child writes as a trainer would, says how far it has committed,
      // and goes on writing until the parent kills it mid-stream.
      close(fds[0]);
      try {
        RunRecorder rec(path, start_of("doomed"), {std::chrono::milliseconds(2), 64});
        for (int64_t i = 0; i < 300; ++i) rec.push_step(step_of(i));
        rec.flush();
        const int64_t id = rec.run_id();
        if (write(fds[1], &id, sizeof id) != sizeof id) _exit(4);
        for (int64_t i = 300;; ++i) {
          rec.push_step(step_of(i));
          if (i % 16 == 0) usleep(200);
        }
      } catch (...) {
        _exit(3);
      }
    }
    close(fds[1]);
    int64_t id = 0;
    const bool told = wait_readable(fds[0], 30000) && read(fds[0], &id, sizeof id) == sizeof id;
    if (told) usleep(100000);  // let it commit more and be somewhere in the middle of a batch
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    close(fds[0]);
    QVERIFY2(told, "the child did not report its run");
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    const RunStore s(path);
    QCOMPARE(s.interrupted_on_open(), std::vector<int64_t>{id});
    const RunDetail d = s.run(id);
    QCOMPARE(d.summary.status, RunStatus::Interrupted);
    QVERIFY(d.summary.ended_at.has_value());
    QVERIFY2(d.error.find(std::to_string(child)) != std::string::npos, d.error.c_str());
    const auto curve = s.step_curve(id);
    QVERIFY2(curve.size() > 300, qPrintable(QString::number(curve.size())));
    for (size_t i = 0; i < curve.size(); ++i) {
      QCOMPARE(curve[i].step, static_cast<int64_t>(i));  // committed batches, no holes
      QCOMPARE(curve[i].loss, step_of(static_cast<int64_t>(i)).loss);
    }
    QCOMPARE(d.summary.steps, static_cast<int64_t>(curve.size()));
    QCOMPARE(raw_text(path, "PRAGMA integrity_check"), std::string("ok"));
    // Marked once: the next open finds nothing to do.
    QVERIFY(RunStore(path).interrupted_on_open().empty());
  }

  void readerSeesCommitsWhileAWriterWrites() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "busy.sqlite");
    RunRecorder rec(path, start_of("busy"), {std::chrono::milliseconds(2), 50});
    const int64_t id = rec.run_id();
    constexpr int64_t kChunk = 500, kChunks = 6;
    std::atomic<bool> done{false};
    std::atomic<int64_t> reader_saw{0};
    std::thread trainer([&] {
      for (int64_t c = 0; c < kChunks; ++c) {
        for (int64_t i = c * kChunk; i < (c + 1) * kChunk; ++i) {
          rec.push_step(step_of(i, 1000));
          if (i % 25 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        // Hold on until the reader has seen this chunk, so every chunk
        // boundary is observed however slow the machine is.
        rec.flush();
        for (int k = 0; k < 20000 && reader_saw < (c + 1) * kChunk; ++k)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      done = true;
    });
    std::set<size_t> seen;
    std::string failure;
    {
      const RunStore reader(path);
      size_t last = 0;
      while (!done && failure.empty()) {
        try {
          const auto curve = reader.step_curve(id);
          const auto runs = reader.list_runs();
          if (curve.size() < last) failure = "the curve shrank";
          for (size_t i = 0; i < curve.size() && failure.empty(); ++i)
            if (curve[i].step != static_cast<int64_t>(i)) failure = "a hole in the curve";
          if (runs.size() != 1 || runs[0].status != RunStatus::Running ||
              runs[0].steps < static_cast<int64_t>(curve.size()))
            failure = "the run list does not match the curve";
          last = curve.size();
          seen.insert(curve.size());
          reader_saw = static_cast<int64_t>(curve.size());
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
    }
    trainer.join();
    QCOMPARE(rec.finish(RunStatus::Finished), std::string());
    QVERIFY2(failure.empty(), failure.c_str());
    QVERIFY2(seen.size() >= static_cast<size_t>(kChunks), qPrintable(QString::number(seen.size())));
    const RunStore after(path);
    QCOMPARE(after.step_curve(id).size(), static_cast<size_t>(kChunk * kChunks));
    QCOMPARE(after.run(id).summary.status, RunStatus::Finished);
    QVERIFY(rec.stats().commits >= kChunks);
  }

  void exportReadsBackExactly() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "export.sqlite");
    RunStore s(path);
    std::vector<int64_t> ids;
    for (int r = 0; r < 2; ++r) {
      const int64_t id = s.begin_run(start_of("run" + std::to_string(r)));
      ids.push_back(id);
      std::vector<StepRecord> steps;
      for (int64_t i = 0; i < 40; ++i) {
        StepRecord st = step_of(i + r);
        st.step = i;
        if (i % 3 == 0) st.loss_scale = std::ldexp(1.0, static_cast<int>(10 + i % 5));
        if (i == 5) st.loss = 1e-300;
        steps.push_back(st);
      }
      EpochRecord a;
      a.epoch = 0;
      a.train_loss = 0.1 + r;
      a.train_top1 = 1.0 / 3.0;
      a.val_loss = 0.2;
      a.val_top1 = 2.0 / 3.0;
      a.val_top5 = 1.0;
      a.images_per_s = 12345.678;
      a.seconds = 0.1;
      a.steps = a.batches = 20;
      EpochRecord b;
      b.epoch = 1;
      b.train_loss = 0.05;
      b.steps = 7;  // cut short
      b.batches = 20;
      s.append(id, steps, std::vector<EpochRecord>{a, b});
      s.end_run(id, RunStatus::Finished);
    }
    std::ostringstream out;
    write_curves_csv(s, ids, out);
    std::vector<std::string> header;
    const auto rows = parse_csv(out.str(), header);
    QCOMPARE(header.size(), size_t{15});
    QCOMPARE(QString::fromStdString(out.str()).section('\n', 0, 0),
             QString::fromLatin1(kCurvesCsvHeader));
    QCOMPARE(rows.size(), size_t{2 * (40 + 2)});
    size_t k = 0;
    for (const int64_t id : ids) {
      for (const StepRecord& st : s.step_curve(id)) {
        const CsvRow& row = rows[k++];
        QCOMPARE(row.kind, std::string("step"));
        QCOMPARE(row.num.at("run_id").value(), static_cast<double>(id));
        QCOMPARE(row.num.at("step").value(), static_cast<double>(st.step));
        QCOMPARE(row.num.at("epoch").value(), static_cast<double>(st.epoch));
        QCOMPARE(row.num.at("loss").value(), st.loss);
        QCOMPARE(row.num.at("top1").value(), st.top1);
        QCOMPARE(row.num.at("lr").value(), st.lr);
        QCOMPARE(row.num.at("loss_scale"), st.loss_scale);
        QCOMPARE(row.num.at("images_per_s").value(), st.images_per_s);
        QVERIFY(!row.num.at("val_loss") && !row.num.at("seconds"));
      }
      for (const EpochRecord& e : s.epochs(id)) {
        const CsvRow& row = rows[k++];
        QCOMPARE(row.kind, std::string("epoch"));
        QCOMPARE(row.num.at("epoch").value(), static_cast<double>(e.epoch));
        QVERIFY(!row.num.at("step") && !row.num.at("lr"));
        QCOMPARE(row.num.at("loss").value(), e.train_loss);
        QCOMPARE(row.num.at("top1").value(), e.train_top1);
        QCOMPARE(row.num.at("val_loss"), e.val_loss);
        QCOMPARE(row.num.at("val_top1"), e.val_top1);
        QCOMPARE(row.num.at("val_top5"), e.val_top5);
        QCOMPARE(row.num.at("images_per_s").value(), e.images_per_s);
        QCOMPARE(row.num.at("seconds").value(), e.seconds);
        QCOMPARE(row.num.at("epoch_steps").value(), static_cast<double>(e.steps));
        QCOMPARE(row.num.at("epoch_batches").value(), static_cast<double>(e.batches));
      }
    }
    // The values went in as written, so the export holds them too.
    QCOMPARE(rows[5].num.at("loss").value(), 1e-300);
    QCOMPARE(rows[0].num.at("loss_scale").value(), 1024.0);
    // An unknown id fails before anything is written.
    std::ostringstream none;
    QVERIFY_THROWS_EXCEPTION(StoreError, write_curves_csv(s, {ids[0], 999}, none));
    QVERIFY(none.str().empty());
  }

  void tagsNotesFilterAndDelete() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "edit.sqlite");
    RunStore s(path);
    const int64_t a = s.begin_run(start_of("lenet-fashion"));
    const int64_t b = s.begin_run(start_of("resnet_8%"));
    s.append(a, std::vector<StepRecord>{step_of(0), step_of(1)}, {});
    s.end_run(a, RunStatus::Finished);
    s.end_run(b, RunStatus::Failed, "the loss became NaN at step 3");
    s.add_tag(a, "baseline");
    s.add_tag(a, "baseline");  // kept once
    s.add_tag(a, "fp32");
    s.add_note(a, "Best so far");
    CheckpointRecord c;
    c.path = "/ck/a.ckpt";
    s.add_checkpoint(a, c);
    QCOMPARE(s.tags(a), (std::vector<std::string>{"baseline", "fp32"}));
    QCOMPARE(s.list_runs()[0].tags, (std::vector<std::string>{"baseline", "fp32"}));
    QCOMPARE(s.run(b).error, std::string("the loss became NaN at step 3"));
    QCOMPARE(s.run(b).summary.status, RunStatus::Failed);

    const auto ids = [&](const std::string& filter) {
      std::vector<int64_t> out;
      for (const auto& r : s.list_runs(filter)) out.push_back(r.id);
      return out;
    };
    QCOMPARE(ids(""), (std::vector<int64_t>{a, b}));
    QCOMPARE(ids("BASELINE"), std::vector<int64_t>{a});  // tags, any case
    QCOMPARE(ids("so far"), std::vector<int64_t>{a});    // notes
    QCOMPARE(ids("failed"), std::vector<int64_t>{b});    // status
    QCOMPARE(ids("%"), std::vector<int64_t>{b});         // a literal %, not a wildcard
    QCOMPARE(ids("t_8"), std::vector<int64_t>{b});       // a literal _
    QVERIFY(ids("x' OR 1=1 --").empty());                // text is a value, never SQL

    for (const char* bad : {"", "two words", "a,b", "tab\there"})
      QVERIFY_THROWS_EXCEPTION(StoreError, s.add_tag(a, bad));
    QVERIFY_THROWS_EXCEPTION(StoreError, s.add_note(a, "  "));
    QVERIFY_THROWS_EXCEPTION(StoreError, s.add_tag(999, "x"));
    QVERIFY_THROWS_EXCEPTION(StoreError, s.remove_tag(a, "absent"));
    s.remove_tag(a, "fp32");
    QCOMPARE(s.tags(a), std::vector<std::string>{"baseline"});

    s.delete_run(a);
    QVERIFY(!s.has_run(a));
    QCOMPARE(ids(""), std::vector<int64_t>{b});
    for (const char* table : {"step_metrics", "epoch_metrics", "checkpoints", "tags", "notes"})
      QCOMPARE(raw_text(path, std::string("SELECT count(*) FROM ") + table), std::string("0"));
    QCOMPARE(raw_text(path, "SELECT count(*) FROM run_configs WHERE run_id = " + std::to_string(a)),
             std::string("0"));
    try {
      s.run(a);
      QFAIL("a deleted run was found");
    } catch (const StoreError& e) {
      QVERIFY2(std::string(e.what()).find("no run " + std::to_string(a)) != std::string::npos,
               e.what());
    }
    // A run whose writer is alive (this process) cannot be deleted from under it.
    const int64_t live = s.begin_run(start_of("live"));
    QVERIFY_THROWS_EXCEPTION(StoreError, s.delete_run(live));
  }

  void deadWritersAreFoundByPidAndStartTime() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "writers.sqlite");
    const pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, nullptr, 0);  // a pid that existed and is gone
    const ProcessIdentity me = current_process();
    QVERIFY(!me.start.empty());
    QCOMPARE(writer_state(me), WriterState::Alive);
    QCOMPARE(writer_state({me.host, child, me.start}), WriterState::Dead);
    // Our own pid with another start time: the pid was reused by someone else.
    const std::string boot = me.start.substr(0, me.start.rfind('/'));
    QCOMPARE(writer_state({me.host, me.pid, boot + "/1"}), WriterState::Dead);
    QCOMPARE(writer_state({me.host, me.pid, "another-boot/1"}), WriterState::Dead);
    QCOMPARE(writer_state({"some-other-host", child, me.start}), WriterState::Unknown);
    int64_t mine = 0;
    {
      RunStore s(path);
      mine = s.begin_run(start_of("mine"));
    }
    raw_sql(path,
            "INSERT INTO runs (name, status, started_at, updated_at, devices, world_size, "
            "precision, seed, engine_version, git_commit, writer_host, writer_pid, writer_start) "
            "VALUES ('gone', 'running', 1, 2, 'cpu:1', 1, 'fp32', 1, 'v', 'c', '" +
                me.host + "', " + std::to_string(child) + ", '" + me.start + "'), " +
                "('remote', 'running', 1, 2, 'cpu:1', 1, 'fp32', 1, 'v', 'c', 'far-away', 1, "
                "'b/1')");
    const RunStore s(path);
    QCOMPARE(s.interrupted_on_open(), std::vector<int64_t>{mine + 1});
    QCOMPARE(s.run(mine).summary.status, RunStatus::Running);  // alive: this process
    QCOMPARE(s.run(mine + 1).summary.status, RunStatus::Interrupted);
    QCOMPARE(s.run(mine + 1).summary.ended_at.value_or(-1), 2.0);  // its last sign of life
    QCOMPARE(s.run(mine + 2).summary.status, RunStatus::Running);  // another host can't be judged
  }

  void recordingErrorsNeverReachTheTrainer() {
    QTemporaryDir dir;
    const std::string path = path_in(dir, "errors.sqlite");
    RecorderOptions o;
    o.flush_interval = std::chrono::milliseconds(1);
    o.batch_rows = 10;
    o.finish_timeout = std::chrono::milliseconds(200);
    RunRecorder rec(path, start_of("x"), o);
    rec.push_step(step_of(0));
    QVERIFY(rec.flush());
    // Someone removes the run under the writer: no commit can go through.
    raw_sql(path, "DELETE FROM step_metrics; DELETE FROM runs;");
    for (int64_t i = 1; i < 100; ++i) rec.push_step(step_of(i));  // must not throw
    QVERIFY(!rec.flush());
    QVERIFY2(rec.error().find("FOREIGN KEY") != std::string::npos, rec.error().c_str());
    QCOMPARE(rec.stats().waiting_rows, int64_t{99});
    const std::string error = rec.finish(RunStatus::Finished);
    QVERIFY2(error.find("99 rows could not be recorded") != std::string::npos, error.c_str());
    QVERIFY2(error.find("FOREIGN KEY") != std::string::npos, error.c_str());
    QVERIFY(rec.stats().commits >= 1);
    QCOMPARE(rec.stats().dropped_rows, int64_t{99});
  }

  void compareShowsOnlyDifferences() {
    QTemporaryDir dir;
    RunStore s(path_in(dir, "compare.sqlite"));
    const int64_t a = s.begin_run(start_of("p", 7, 0.05));
    const int64_t b = s.begin_run(start_of("p", 8, 0.1));
    EpochRecord e;
    e.val_top1 = 0.8;
    e.val_loss = 0.4;
    s.append(a, {}, std::vector<EpochRecord>{e});
    e.val_top1 = 0.9;
    e.val_loss = 0.5;
    s.append(b, {}, std::vector<EpochRecord>{e});
    RunComparison c = compare_runs(s, {a, b});
    std::map<std::string, std::vector<std::string>> diff;
    for (const auto& d : c.differences) diff[d.key] = d.values;
    QCOMPARE(diff.size(), size_t{2});
    QCOMPARE(diff.at("training/optimizer/lr"), (std::vector<std::string>{"0.05", "0.1"}));
    QCOMPARE(diff.at("training/seed"), (std::vector<std::string>{"7", "8"}));
    QCOMPARE(c.best.value(), size_t{1});  // higher val_top1
    c = compare_runs(s, {a, b}, "val_loss");
    QCOMPARE(c.best.value(), size_t{0});  // lower loss
    QCOMPARE(c.metric_by_epoch.size(), size_t{1});
    QCOMPARE(c.metric_by_epoch[0][1].value_or(-1), 0.5);
    QVERIFY_THROWS_EXCEPTION(StoreError, compare_runs(s, {a, b}, "accuracy"));
    QVERIFY_THROWS_EXCEPTION(StoreError, compare_runs(s, {a, 99}));
  }

  void storeLocationFollowsFlagEnvAndXdg() {
    const auto keep = [](const char* name) {
      const char* v = std::getenv(name);
      return v ? std::optional<std::string>(v) : std::nullopt;
    };
    const auto saved_store = keep(kStoreEnvVar), saved_xdg = keep("XDG_DATA_HOME"),
               saved_home = keep("HOME");
    setenv(kStoreEnvVar, "/env/runs.sqlite", 1);
    setenv("XDG_DATA_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    QCOMPARE(resolve_store_path("/flag/s.sqlite"), std::string("/flag/s.sqlite"));
    QCOMPARE(resolve_store_path(), std::string("/env/runs.sqlite"));
    unsetenv(kStoreEnvVar);
    QCOMPARE(resolve_store_path(), std::string("/xdg/renaissance/runs.sqlite"));
    setenv("XDG_DATA_HOME", "relative/is/ignored", 1);
    QCOMPARE(resolve_store_path(), std::string("/home/u/.local/share/renaissance/runs.sqlite"));
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    QVERIFY_THROWS_EXCEPTION(StoreError, resolve_store_path());
    const auto restore = [](const char* name, const std::optional<std::string>& v) {
      if (v)
        setenv(name, v->c_str(), 1);
      else
        unsetenv(name);
    };
    restore(kStoreEnvVar, saved_store);
    restore("XDG_DATA_HOME", saved_xdg);
    restore("HOME", saved_home);
  }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"

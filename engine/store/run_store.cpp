// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_store.h>

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <renaissance/store_location.h>
#include "store/build_info.h"
#include "store/process_identity.h"
#include "store/schema.h"
#include "store/sqlite_db.h"

namespace tr::store {

namespace {

namespace fs = std::filesystem;

// A writer holding the lock this long means something is wrong; waiting
// longer would only hide it.
constexpr int kBusyTimeoutMs = 10000;

struct FileHeader {
  int64_t application_id = 0;
  int64_t version = 0;
  int64_t objects = 0;  // tables, indexes, ... in sqlite_master
};

constexpr const char* kLeftUntouched =
    "; it was left untouched (give another path with --store or $RENAISSANCE_STORE)";

// Reads the header fields without writing anything. A file that is not an
// SQLite database fails at its first read.
FileHeader read_header(const SqliteDb& db) {
  FileHeader h;
  const auto one = [&](const char* sql, int64_t& out) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db.handle(), sql, -1, &st, nullptr);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(st);
      if (rc == SQLITE_ROW) {
        out = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
      }
    }
    const std::string msg = sqlite3_errmsg(db.handle());
    sqlite3_finalize(st);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) == SQLITE_NOTADB)
      throw StoreError("'" + db.path() + "' is not a run store: it is not an SQLite database (" +
                       msg + ")" + kLeftUntouched);
    if ((rc & 0xff) == SQLITE_CORRUPT)
      throw StoreError("'" + db.path() +
                       "' is not a usable run store: the SQLite file is damaged (" + msg + ")" +
                       kLeftUntouched);
    throw StoreError("cannot read the run store '" + db.path() + "': " + msg);
  };
  one("PRAGMA application_id", h.application_id);
  one("PRAGMA user_version", h.version);
  one("SELECT count(*) FROM sqlite_master", h.objects);
  return h;
}

// True for a database to initialise; throws for anything that is not ours
// or is too new.
bool check_header(const FileHeader& h, const std::string& path) {
  if (h.application_id == kStoreApplicationId) {
    if (h.version > kStoreSchemaVersion)
      throw StoreError("the run store '" + path +
                       "' was written by a newer version of Renaissance (schema version " +
                       std::to_string(h.version) + "; this build reads versions 1 to " +
                       std::to_string(kStoreSchemaVersion) + ")" + kLeftUntouched);
    if (h.version < 1)
      throw StoreError("'" + path + "' is marked as a run store but has no schema version" +
                       kLeftUntouched);
    return false;
  }
  if (h.application_id == 0 && h.version == 0 && h.objects == 0) return true;
  throw StoreError("'" + path + "' is an SQLite database but not a run store (application id " +
                   std::to_string(h.application_id) + ", " + std::to_string(h.objects) +
                   " schema objects)" + kLeftUntouched);
}

std::string like_pattern(const std::string& text) {
  std::string p = "%";
  for (const char c : text) {
    if (c == '%' || c == '_' || c == '\\') p += '\\';
    p += c;
  }
  return p + "%";
}

std::vector<std::string> split_tags(const std::string& joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = joined.find(',', start);
    if (end == std::string::npos) end = joined.size();
    out.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The columns read_summary() reads, in its order; run() adds the detail after them.
#define TR_SUMMARY_COLUMNS                                                                      \
  "r.id, r.name, r.status, r.started_at, r.ended_at, r.updated_at, r.devices, r.world_size, "   \
  "r.precision, r.seed, r.steps, r.epochs, r.final_train_loss, r.final_train_top1, "            \
  "r.final_val_loss, r.final_val_top1, r.final_val_top5, "                                      \
  "(SELECT group_concat(tag, ',') FROM (SELECT tag FROM tags t WHERE t.run_id = r.id ORDER BY " \
  "tag)), r.final_weights"
constexpr int kSummaryColumns = 19;

RunSummary read_summary(const Statement& s) {
  RunSummary r;
  r.id = s.int64(0);
  r.name = s.text(1);
  r.status = parse_run_status(s.text(2)).value_or(RunStatus::Failed);
  r.started_at = s.real(3);
  r.ended_at = s.optional_real(4);
  r.updated_at = s.real(5);
  r.devices = s.text(6);
  r.world_size = static_cast<int>(s.int64(7));
  r.precision = s.text(8);
  r.seed = static_cast<uint64_t>(s.int64(9));
  r.steps = s.int64(10);
  r.epochs = s.int64(11);
  r.final_train_loss = s.optional_real(12);
  r.final_train_top1 = s.optional_real(13);
  r.final_val_loss = s.optional_real(14);
  r.final_val_top1 = s.optional_real(15);
  r.final_val_top5 = s.optional_real(16);
  r.tags = split_tags(s.text(17));
  r.final_weights = s.text(18);
  return r;
}

void check_tag(const std::string& tag) {
  if (tag.empty()) throw StoreError("a tag cannot be empty");
  if (tag.size() > 64) throw StoreError("the tag '" + tag + "' is longer than 64 characters");
  for (const char c : tag)
    if (static_cast<unsigned char>(c) <= ' ' || c == ',' || c == 0x7f)
      throw StoreError("the tag '" + tag +
                       "' holds a space, a comma or a control character; tags are single words");
}

}  // namespace

// append() runs every flush interval for as long as a run trains; preparing
// its statements once keeps each commit to the inserts themselves.
struct RunStore::AppendStatements {
  explicit AppendStatements(const SqliteDb& db)
      : step(db,
             "INSERT OR REPLACE INTO step_metrics "
             "(run_id, step, epoch, loss, top1, lr, loss_scale, images_per_s) "
             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        epoch(db,
              "INSERT OR REPLACE INTO epoch_metrics "
              "(run_id, epoch, train_loss, train_top1, val_loss, val_top1, val_top5, "
              "images_per_s, seconds, ended_at, per_class_accuracy, confusion, steps, batches) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
        // `epochs` counts whole epochs; the final training figures are the
        // last whole epoch's, or a partial one's while there is none (?8).
        finals(db,
               "UPDATE runs SET epochs = max(epochs, ?2), "
               "final_train_loss = CASE WHEN ?8 OR epochs = 0 THEN ?3 ELSE final_train_loss END, "
               "final_train_top1 = CASE WHEN ?8 OR epochs = 0 THEN ?4 ELSE final_train_top1 END, "
               "final_val_loss = coalesce(?5, final_val_loss), "
               "final_val_top1 = coalesce(?6, final_val_top1), "
               "final_val_top5 = coalesce(?7, final_val_top5) WHERE id = ?1"),
        progress(db, "UPDATE runs SET steps = max(steps, ?2), updated_at = ?3 WHERE id = ?1") {}
  Statement step, epoch, finals, progress;
};

RunStore::~RunStore() = default;

const std::string& RunStore::path() const noexcept {
  return db_->path();
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

RunStore::RunStore(const std::string& path) {
  if (path.empty()) throw StoreError("the run store path is empty");
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status st = fs::status(p, ec);
  const bool created = !fs::exists(st);
  if (fs::is_directory(st))
    throw StoreError("the run store path '" + path + "' is a folder; give the path of a file");
  if (created && p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec)
      throw StoreError("cannot create the folder '" + p.parent_path().string() +
                       "' for the run store: " + ec.message());
  }
  db_ = std::make_unique<SqliteDb>(
      path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (created ? SQLITE_OPEN_CREATE : 0));
  sqlite3_busy_timeout(db_->handle(), kBusyTimeoutMs);
  check_and_prepare();
  mark_dead_writers();
}

void RunStore::set_busy_timeout(std::chrono::milliseconds timeout) {
  sqlite3_busy_timeout(db_->handle(), static_cast<int>(timeout.count()));
}

bool RunStore::file_moved() const {
  int moved = 0;
  if (sqlite3_file_control(db_->handle(), "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK)
    return false;
  return moved != 0;
}

std::string RunStore::restore_moved_file() {
  const std::string original = db_->path();
  std::string copy = original + ".restored";
  for (int n = 2; fs::exists(copy); ++n) copy = original + ".restored" + std::to_string(n);
  {
    SqliteDb to(copy, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
    sqlite3_backup* b = sqlite3_backup_init(to.handle(), "main", db_->handle(), "main");
    if (!b) to.fail("cannot copy the deleted run store '" + original + "'");
    const int stepped = sqlite3_backup_step(b, -1);
    const int finished = sqlite3_backup_finish(b);
    if (stepped != SQLITE_DONE || finished != SQLITE_OK) {
      std::error_code ignored;
      fs::remove(copy, ignored);
      to.fail("cannot copy the deleted run store '" + original + "'");
    }
  }
  append_.reset();
  db_.reset();
  // SQLite leaves the -wal and -shm of a deleted database behind (their
  // pages are in the copy). Connections still open on it keep their own
  // descriptors and never touch these names again, but a new store under
  // the name would read them as its own: they go first. A file someone put
  // at the path is not ours to replace; the copy stays beside it.
  std::string target = copy;
  std::error_code ec;
  if (!fs::exists(original, ec)) {
    for (const char* suffix : {"-wal", "-shm"}) fs::remove(original + suffix, ec);
    fs::rename(copy, original, ec);
    if (!ec) target = original;
  }
  db_ = std::make_unique<SqliteDb>(target, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX);
  sqlite3_busy_timeout(db_->handle(), kBusyTimeoutMs);
  check_and_prepare();
  return target;
}

void RunStore::check_and_prepare() {
  const FileHeader first = read_header(*db_);
  const bool empty = check_header(first, db_->path());
  opened_version_ = static_cast<int>(first.version);
  // Only now, with the file known to be ours (or empty), may anything write.
  db_->exec("PRAGMA journal_mode = WAL");
  db_->exec("PRAGMA synchronous = NORMAL");
  db_->exec("PRAGMA foreign_keys = ON");
  if (!empty && first.version == kStoreSchemaVersion) return;
  Transaction t(*db_);
  // Another process may have initialised or migrated it meanwhile.
  const FileHeader h = read_header(*db_);
  check_header(h, db_->path());
  if (h.version < kStoreSchemaVersion) migrate_store(*db_, static_cast<int>(h.version));
  t.commit();
}

void RunStore::mark_dead_writers() {
  if (sqlite3_db_readonly(db_->handle(), "main") == 1) return;  // a reader on read-only media
  std::vector<std::pair<int64_t, ProcessIdentity>> dead;
  {
    Statement q(*db_,
                "SELECT id, writer_host, writer_pid, writer_start FROM runs "
                "WHERE status = 'running'");
    while (q.step()) {
      ProcessIdentity w{q.text(1), q.int64(2), q.text(3)};
      if (writer_state(w) == WriterState::Dead) dead.emplace_back(q.int64(0), std::move(w));
    }
  }
  if (dead.empty()) return;
  Transaction t(*db_);
  Statement u(*db_,
              "UPDATE runs SET status = 'interrupted', ended_at = updated_at, error = ?2 "
              "WHERE id = ?1 AND status = 'running'");
  for (const auto& [id, w] : dead) {
    u.bind(1, id).bind(2, "the writing process (pid " + std::to_string(w.pid) + " on " + w.host +
                              ") ended without closing the run");
    u.run();
    if (sqlite3_changes(db_->handle()) > 0) interrupted_.push_back(id);
    u.reset();
  }
  t.commit();
}

int RunStore::schema_version() const {
  Statement s(*db_, "PRAGMA user_version");
  s.step();
  return static_cast<int>(s.int64(0));
}

int64_t RunStore::begin_run(const RunStart& start) {
  const ProcessIdentity me = current_process();
  const double now = unix_now();
  Transaction t(*db_);
  Statement s(*db_,
              "INSERT INTO runs (name, status, started_at, updated_at, devices, world_size, "
              "precision, seed, engine_version, git_commit, writer_host, writer_pid, "
              "writer_start) VALUES (?1, 'running', ?2, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  s.bind(1, start.name)
      .bind(2, now)
      .bind(3, start.devices)
      .bind(4, static_cast<int64_t>(start.world_size))
      .bind(5, start.precision)
      .bind(6, static_cast<int64_t>(start.seed))
      .bind(7, engine_version())
      .bind(8, engine_git_commit())
      .bind(9, me.host)
      .bind(10, me.pid)
      .bind(11, me.start);
  s.run();
  const int64_t id = sqlite3_last_insert_rowid(db_->handle());
  Statement c(*db_,
              "INSERT INTO run_configs (run_id, hyper_json, project_json) VALUES (?1, ?2, ?3)");
  c.bind(1, id)
      .bind(2, start.hyper_json.empty() ? std::string("{}") : start.hyper_json)
      .bind(3, start.project_json);
  c.run();
  t.commit();
  return id;
}

void RunStore::append(int64_t run, std::span<const StepRecord> steps,
                      std::span<const EpochRecord> epochs) {
  if (steps.empty() && epochs.empty()) return;
  if (!append_) append_ = std::make_unique<AppendStatements>(*db_);
  AppendStatements& st = *append_;
  const double now = unix_now();
  Transaction t(*db_);
  int64_t next_step = 0;
  for (const StepRecord& r : steps) {
    st.step.reset();
    st.step.bind(1, run)
        .bind(2, r.step)
        .bind(3, r.epoch)
        .bind(4, r.loss)
        .bind(5, r.top1)
        .bind(6, r.lr)
        .bind(7, r.loss_scale)
        .bind(8, r.images_per_s);
    st.step.run();
    next_step = std::max(next_step, r.step + 1);
  }
  for (const EpochRecord& e : epochs) {
    st.epoch.reset();
    st.epoch.bind(1, run)
        .bind(2, e.epoch)
        .bind(3, e.train_loss)
        .bind(4, e.train_top1)
        .bind(5, e.val_loss)
        .bind(6, e.val_top1)
        .bind(7, e.val_top5)
        .bind(8, e.images_per_s)
        .bind(9, e.seconds)
        .bind(10, e.ended_at > 0 ? e.ended_at : now);
    const std::vector<double> acc =
        e.per_class_accuracy.empty() ? per_class_accuracy(e.confusion) : e.per_class_accuracy;
    if (acc.empty())
      st.epoch.bind_null(11);
    else
      st.epoch.bind(11, nlohmann::json(acc).dump());
    if (e.confusion.empty()) {
      st.epoch.bind_null(12);
    } else {
      const int64_t k = confusion_classes(e.confusion.size());
      nlohmann::json rows = nlohmann::json::array();
      for (int64_t r = 0; r < k; ++r)
        rows.push_back(
            std::vector<int64_t>(e.confusion.begin() + r * k, e.confusion.begin() + (r + 1) * k));
      st.epoch.bind(12, rows.dump());
    }
    if (e.batches > 0)
      st.epoch.bind(13, e.steps).bind(14, e.batches);
    else
      st.epoch.bind_null(13).bind_null(14);
    st.epoch.run();
  }
  if (!epochs.empty()) {
    const EpochRecord* whole = nullptr;
    for (const EpochRecord& e : epochs)
      if (!e.partial()) whole = &e;
    const EpochRecord& last = whole ? *whole : epochs.back();
    // Validation figures come from the last validated epoch: an epoch cut
    // short by a stop has none, and must not erase the ones before it.
    const EpochRecord* validated = nullptr;
    for (const EpochRecord& e : epochs)
      if (e.val_loss || e.val_top1 || e.val_top5) validated = &e;
    const EpochRecord none;
    const EpochRecord& val = validated ? *validated : none;
    st.finals.reset();
    st.finals.bind(1, run)
        .bind(2, whole ? whole->epoch + 1 : int64_t{0})
        .bind(3, last.train_loss)
        .bind(4, last.train_top1)
        .bind(5, val.val_loss)
        .bind(6, val.val_top1)
        .bind(7, val.val_top5)
        .bind(8, int64_t{whole ? 1 : 0});
    st.finals.run();
  }
  st.progress.reset();
  st.progress.bind(1, run).bind(2, next_step).bind(3, now);
  st.progress.run();
  t.commit();
}

void RunStore::end_run(int64_t run, RunStatus status, const std::string& error) {
  if (status == RunStatus::Running || status == RunStatus::Interrupted)
    throw std::logic_error("end_run takes finished, stopped or failed");
  const double now = unix_now();
  Statement s(*db_,
              "UPDATE runs SET status = ?2, ended_at = ?3, updated_at = ?3, error = ?4 "
              "WHERE id = ?1");
  s.bind(1, run).bind(2, run_status_name(status)).bind(3, now);
  if (error.empty())
    s.bind_null(4);
  else
    s.bind(4, error);
  s.run();
}

void RunStore::set_final_weights(int64_t run, const std::string& path) {
  Statement s(*db_, "UPDATE runs SET final_weights = ?2 WHERE id = ?1");
  s.bind(1, run);
  if (path.empty())
    s.bind_null(2);
  else
    s.bind(2, path);
  s.run();
}

ResumeRecord RunStore::resume_run(int64_t run, const ResumeStart& resume) {
  if (resume.step < 0 || resume.epoch < 0)
    throw StoreError("a resumption needs the checkpoint's step and epoch");
  const ProcessIdentity me = current_process();
  Transaction t(*db_);
  // Read inside the write transaction: two processes resuming the same run
  // cannot both find it ended.
  const RunDetail d = this->run(run);
  check_resumable(d);
  const RunStatus was = d.summary.status;
  ResumeRecord r;
  r.resumed_at = unix_now();
  r.previous_status = was;
  r.last_update = d.summary.updated_at;
  r.checkpoint_path = resume.checkpoint_path;
  r.from_step = resume.step;
  r.writer_pid = me.pid;
  {
    Statement c(*db_, "SELECT count(*) FROM step_metrics WHERE run_id = ?1 AND step >= ?2");
    c.bind(1, run).bind(2, resume.step);
    c.step();
    r.retrained_steps = c.int64(0);
  }
  Statement drop_steps(*db_, "DELETE FROM step_metrics WHERE run_id = ?1 AND step >= ?2");
  drop_steps.bind(1, run).bind(2, resume.step);
  drop_steps.run();
  Statement drop_epochs(*db_, "DELETE FROM epoch_metrics WHERE run_id = ?1 AND epoch >= ?2");
  drop_epochs.bind(1, run).bind(2, resume.epoch);
  drop_epochs.run();
  // The final figures go back to those of the last epoch kept.
  Statement u(*db_,
              "UPDATE runs SET status = 'running', ended_at = NULL, error = NULL, "
              "updated_at = ?2, writer_host = ?3, writer_pid = ?4, writer_start = ?5, "
              "steps = ?6, epochs = ?7, "
              "final_train_loss = (SELECT train_loss FROM epoch_metrics e WHERE e.run_id = ?1 "
              "  ORDER BY coalesce(steps >= batches, 1) DESC, epoch DESC LIMIT 1), "
              "final_train_top1 = (SELECT train_top1 FROM epoch_metrics e WHERE e.run_id = ?1 "
              "  ORDER BY coalesce(steps >= batches, 1) DESC, epoch DESC LIMIT 1), "
              "final_val_loss = (SELECT val_loss FROM epoch_metrics e WHERE e.run_id = ?1 "
              "  AND val_loss IS NOT NULL ORDER BY epoch DESC LIMIT 1), "
              "final_val_top1 = (SELECT val_top1 FROM epoch_metrics e WHERE e.run_id = ?1 "
              "  AND val_loss IS NOT NULL ORDER BY epoch DESC LIMIT 1), "
              "final_val_top5 = (SELECT val_top5 FROM epoch_metrics e WHERE e.run_id = ?1 "
              "  AND val_loss IS NOT NULL ORDER BY epoch DESC LIMIT 1) "
              "WHERE id = ?1");
  u.bind(1, run)
      .bind(2, r.resumed_at)
      .bind(3, me.host)
      .bind(4, me.pid)
      .bind(5, me.start)
      .bind(6, resume.step)
      .bind(7, resume.epoch);
  u.run();
  Statement i(*db_,
              "INSERT INTO run_resumes (run_id, resumed_at, previous_status, last_update, "
              "checkpoint_path, from_step, retrained_steps, writer_pid) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  i.bind(1, run)
      .bind(2, r.resumed_at)
      .bind(3, run_status_name(was))
      .bind(4, r.last_update)
      .bind(5, r.checkpoint_path)
      .bind(6, r.from_step)
      .bind(7, r.retrained_steps)
      .bind(8, r.writer_pid);
  i.run();
  r.id = sqlite3_last_insert_rowid(db_->handle());
  t.commit();
  return r;
}

void RunStore::require_run(int64_t run) const {
  if (!has_run(run)) no_such_run(run);
}

void RunStore::no_such_run(int64_t run) const {
  throw StoreError("there is no run " + std::to_string(run) + " in the run store '" + db_->path() +
                   "' (renaissance-cli runs list shows the ids)");
}

int64_t RunStore::add_checkpoint(int64_t run, const CheckpointRecord& c) {
  require_run(run);
  if (c.path.empty()) throw StoreError("a checkpoint record needs the checkpoint's path");
  Statement s(*db_,
              "INSERT INTO checkpoints (run_id, path, epoch, step, metrics_json, created_at) "
              "SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM checkpoints "
              "WHERE run_id = ?1 AND path = ?2 AND created_at = ?6)");
  s.bind(1, run).bind(2, c.path);
  if (c.epoch)
    s.bind(3, *c.epoch);
  else
    s.bind_null(3);
  if (c.step)
    s.bind(4, *c.step);
  else
    s.bind_null(4);
  if (c.metrics_json.empty())
    s.bind_null(5);
  else
    s.bind(5, c.metrics_json);
  // The same record twice (a retry after a commit that went through) is one row.
  s.bind(6, c.created_at > 0 ? c.created_at : unix_now());
  s.run();
  return sqlite3_last_insert_rowid(db_->handle());
}

void RunStore::add_tag(int64_t run, const std::string& tag) {
  check_tag(tag);
  require_run(run);
  Statement s(*db_, "INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?1, ?2)");
  s.bind(1, run).bind(2, tag);
  s.run();
}

void RunStore::remove_tag(int64_t run, const std::string& tag) {
  require_run(run);
  Statement s(*db_, "DELETE FROM tags WHERE run_id = ?1 AND tag = ?2");
  s.bind(1, run).bind(2, tag);
  s.run();
  if (sqlite3_changes(db_->handle()) == 0)
    throw StoreError("run " + std::to_string(run) + " has no tag '" + tag + "'");
}

int64_t RunStore::add_note(int64_t run, const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw StoreError("a note needs some text");
  require_run(run);
  Statement s(*db_, "INSERT INTO notes (run_id, text, created_at) VALUES (?1, ?2, ?3)");
  s.bind(1, run).bind(2, text).bind(3, unix_now());
  s.run();
  return sqlite3_last_insert_rowid(db_->handle());
}

void RunStore::delete_run(int64_t run) {
  const RunDetail d = this->run(run);
  if (d.summary.status == RunStatus::Running &&
      writer_state({d.writer_host, d.writer_pid, d.writer_start}) != WriterState::Dead)
    throw StoreError("run " + std::to_string(run) + " is still being recorded by process " +
                     std::to_string(d.writer_pid) + " on " + d.writer_host +
                     "; stop that training first");
  Transaction t(*db_);
  for (const char* sql :
       {"DELETE FROM step_metrics WHERE run_id = ?1", "DELETE FROM epoch_metrics WHERE run_id = ?1",
        "DELETE FROM checkpoints WHERE run_id = ?1", "DELETE FROM tags WHERE run_id = ?1",
        "DELETE FROM notes WHERE run_id = ?1", "DELETE FROM run_resumes WHERE run_id = ?1",
        "DELETE FROM run_configs WHERE run_id = ?1", "DELETE FROM runs WHERE id = ?1"}) {
    Statement s(*db_, sql);
    s.bind(1, run);
    s.run();
  }
  t.commit();
  // Its own files go with it (the final weights); a folder that cannot be
  // removed is left, as files of the user's own would be.
  std::error_code ec;
  std::filesystem::remove_all(run_folder(path(), run), ec);
}

std::vector<RunSummary> RunStore::list_runs(const std::string& filter) const {
  Statement s(*db_, "SELECT " TR_SUMMARY_COLUMNS
                    " FROM runs r WHERE ?1 = '' OR r.name LIKE ?2 ESCAPE '\\' "
                    "OR r.status LIKE ?2 ESCAPE '\\' OR r.devices LIKE ?2 ESCAPE '\\' "
                    "OR r.precision LIKE ?2 ESCAPE '\\' OR r.git_commit LIKE ?2 ESCAPE '\\' "
                    "OR EXISTS (SELECT 1 FROM tags t WHERE t.run_id = r.id "
                    "AND t.tag LIKE ?2 ESCAPE '\\') "
                    "OR EXISTS (SELECT 1 FROM notes n WHERE n.run_id = r.id "
                    "AND n.text LIKE ?2 ESCAPE '\\') "
                    "ORDER BY r.id");
  s.bind(1, filter).bind(2, like_pattern(filter));
  std::vector<RunSummary> out;
  while (s.step()) out.push_back(read_summary(s));
  return out;
}

bool RunStore::has_run(int64_t run) const {
  Statement s(*db_, "SELECT 1 FROM runs WHERE id = ?1");
  s.bind(1, run);
  return s.step();
}

RunDetail RunStore::run(int64_t run) const {
  Statement s(*db_, "SELECT " TR_SUMMARY_COLUMNS
                    ", r.engine_version, r.git_commit, r.writer_host, r.writer_pid, "
                    "r.writer_start, r.error, c.hyper_json, c.project_json "
                    "FROM runs r LEFT JOIN run_configs c ON c.run_id = r.id WHERE r.id = ?1");
  s.bind(1, run);
  if (!s.step()) no_such_run(run);
  RunDetail d;
  d.summary = read_summary(s);
  int c = kSummaryColumns;
  d.engine_version = s.text(c++);
  d.git_commit = s.text(c++);
  d.writer_host = s.text(c++);
  d.writer_pid = s.int64(c++);
  d.writer_start = s.text(c++);
  d.error = s.text(c++);
  d.hyper_json = s.text(c++);
  d.project_json = s.text(c++);
  return d;
}

std::vector<StepRecord> RunStore::step_curve(int64_t run, int64_t from_step) const {
  Statement s(*db_,
              "SELECT step, epoch, loss, top1, lr, loss_scale, images_per_s FROM step_metrics "
              "WHERE run_id = ?1 AND step >= ?2 ORDER BY step");
  s.bind(1, run).bind(2, from_step);
  std::vector<StepRecord> out;
  while (s.step()) {
    StepRecord r;
    r.step = s.int64(0);
    r.epoch = s.int64(1);
    r.loss = s.real(2);
    r.top1 = s.real(3);
    r.lr = s.real(4);
    r.loss_scale = s.optional_real(5);
    r.images_per_s = s.real(6);
    out.push_back(r);
  }
  return out;
}

std::vector<EpochRecord> RunStore::epochs(int64_t run) const {
  Statement s(*db_,
              "SELECT epoch, train_loss, train_top1, val_loss, val_top1, val_top5, "
              "images_per_s, seconds, ended_at, per_class_accuracy, confusion, steps, batches "
              "FROM epoch_metrics WHERE run_id = ?1 ORDER BY epoch");
  s.bind(1, run);
  std::vector<EpochRecord> out;
  while (s.step()) {
    EpochRecord e;
    e.epoch = s.int64(0);
    e.train_loss = s.real(1);
    e.train_top1 = s.real(2);
    e.val_loss = s.optional_real(3);
    e.val_top1 = s.optional_real(4);
    e.val_top5 = s.optional_real(5);
    e.images_per_s = s.real(6);
    e.seconds = s.real(7);
    e.ended_at = s.real(8);
    e.steps = s.int64(11);  // NULL reads as 0: a whole epoch of an older store
    e.batches = s.int64(12);
    // Written by append() only, but a hand-edited store must not crash a reader.
    const auto acc = nlohmann::json::parse(s.text(9), nullptr, false);
    if (acc.is_array())
      for (const auto& v : acc)
        if (v.is_number()) e.per_class_accuracy.push_back(v.get<double>());
    const auto conf = nlohmann::json::parse(s.text(10), nullptr, false);
    if (conf.is_array())
      for (const auto& row : conf)
        if (row.is_array())
          for (const auto& v : row)
            if (v.is_number_integer()) e.confusion.push_back(v.get<int64_t>());
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<CheckpointRecord> RunStore::checkpoints(int64_t run) const {
  Statement s(*db_,
              "SELECT id, path, epoch, step, metrics_json, created_at FROM checkpoints "
              "WHERE run_id = ?1 ORDER BY id");
  s.bind(1, run);
  std::vector<CheckpointRecord> out;
  while (s.step()) {
    CheckpointRecord c;
    c.id = s.int64(0);
    c.path = s.text(1);
    if (!s.is_null(2)) c.epoch = s.int64(2);
    if (!s.is_null(3)) c.step = s.int64(3);
    c.metrics_json = s.text(4);
    c.created_at = s.real(5);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ResumeRecord> RunStore::resumes(int64_t run) const {
  Statement s(*db_,
              "SELECT id, resumed_at, previous_status, last_update, checkpoint_path, from_step, "
              "retrained_steps, writer_pid FROM run_resumes WHERE run_id = ?1 ORDER BY id");
  s.bind(1, run);
  std::vector<ResumeRecord> out;
  while (s.step()) {
    ResumeRecord r;
    r.id = s.int64(0);
    r.resumed_at = s.real(1);
    r.previous_status = parse_run_status(s.text(2)).value_or(RunStatus::Interrupted);
    r.last_update = s.real(3);
    r.checkpoint_path = s.text(4);
    r.from_step = s.int64(5);
    r.retrained_steps = s.int64(6);
    r.writer_pid = s.int64(7);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> RunStore::tags(int64_t run) const {
  Statement s(*db_, "SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag");
  s.bind(1, run);
  std::vector<std::string> out;
  while (s.step()) out.push_back(s.text(0));
  return out;
}

std::vector<NoteRecord> RunStore::notes(int64_t run) const {
  Statement s(*db_, "SELECT id, text, created_at FROM notes WHERE run_id = ?1 ORDER BY id");
  s.bind(1, run);
  std::vector<NoteRecord> out;
  while (s.step()) out.push_back({s.int64(0), s.text(1), s.real(2)});
  return out;
}

}  // namespace tr::store

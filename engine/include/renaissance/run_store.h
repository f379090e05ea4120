// SPDX-License-Identifier: GPL-3.0-or-later
// The run store: one SQLite file (WAL) that every training run, from the CLI
// or the workbench, is recorded in. Opening checks the file is a store,
// refuses one from a newer schema, migrates an older one forward and marks
// runs whose writer died as interrupted. Readers and one writer per run work
// at the same time, from threads or processes, each with its own RunStore.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <renaissance/run_records.h>

namespace tr::store {

class SqliteDb;

class RunStore {
 public:
  // Opens the store at `path`, creating it (and its folders) when the path
  // does not exist. An empty file, or an SQLite database without tables, is
  // initialised. Throws StoreError, leaving the file untouched, when it is
  // not a run store or was written by a newer schema version.
  explicit RunStore(const std::string& path);
  // Prepared statements point at the connection, so a store stays where it was made.
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;
  ~RunStore();

  const std::string& path() const noexcept;
  int schema_version() const;
  // The schema version the file had before this open migrated it.
  int opened_version() const noexcept { return opened_version_; }
  // Runs this open found with a dead writer and marked interrupted.
  const std::vector<int64_t>& interrupted_on_open() const noexcept { return interrupted_; }

  // How long a statement waits for another connection's lock before it
  // fails (10 s unless set).
  void set_busy_timeout(std::chrono::milliseconds timeout);
  // The file this store has open was deleted, renamed or replaced since:
  // what it writes now would go with the old file.
  bool file_moved() const;
  // After file_moved(): copies everything the open (deleted) store holds to
  // a new file and goes on there: path() itself when nothing is there now,
  // else (another file was put there) path().restored beside it. Returns
  // the file now written; throws StoreError when the copy cannot be made.
  std::string restore_moved_file();

  // --- writing (one RunStore per thread; a run has one writer) ---
  // Inserts a run as running, written by the calling process. Returns its id.
  int64_t begin_run(const RunStart& start);
  // Appends metrics in one transaction and refreshes the run's step and
  // epoch counts and final metrics (from the last epoch given).
  void append(int64_t run, std::span<const StepRecord> steps, std::span<const EpochRecord> epochs);
  // Sets the final status (not Running or Interrupted) and the end time.
  void end_run(int64_t run, RunStatus status, const std::string& error = {});
  // The file of the weights the run ended with (store_location.h's
  // final_weights_path); empty: none.
  void set_final_weights(int64_t run, const std::string& path);
  // Takes up an interrupted, stopped or failed run again from a checkpoint,
  // written by the calling process: the steps and epochs recorded past the
  // checkpoint are dropped (they are trained again), the run is running
  // once more and the resumption is recorded. Throws StoreError for a run
  // that is running or finished.
  ResumeRecord resume_run(int64_t run, const ResumeStart& resume);
  int64_t add_checkpoint(int64_t run, const CheckpointRecord& checkpoint);
  // Tags are single words (no spaces or commas), at most 64 characters; a
  // tag a run already has is kept once.
  void add_tag(int64_t run, const std::string& tag);
  void remove_tag(int64_t run, const std::string& tag);
  int64_t add_note(int64_t run, const std::string& text);
  // Removes the run and all its metrics, checkpoint rows, tags and notes,
  // and its own folder (run_folder: the final weights). Refuses a run whose
  // writer is still alive.
  void delete_run(int64_t run);

  // --- reading ---
  // Every run, oldest first. `filter` keeps runs whose name, status, devices,
  // precision, git commit, a tag or a note contains it (case-insensitive).
  std::vector<RunSummary> list_runs(const std::string& filter = {}) const;
  bool has_run(int64_t run) const;
  // Throws StoreError naming the id and the store when there is no such run.
  RunDetail run(int64_t run) const;
  // Its steps from `from_step` on (a follower reads only the new ones).
  std::vector<StepRecord> step_curve(int64_t run, int64_t from_step = 0) const;
  std::vector<EpochRecord> epochs(int64_t run) const;
  std::vector<CheckpointRecord> checkpoints(int64_t run) const;
  std::vector<ResumeRecord> resumes(int64_t run) const;
  std::vector<std::string> tags(int64_t run) const;
  std::vector<NoteRecord> notes(int64_t run) const;

 private:
  void check_and_prepare();
  void mark_dead_writers();
  void require_run(int64_t run) const;
  [[noreturn]] void no_such_run(int64_t run) const;

  struct AppendStatements;

  std::unique_ptr<SqliteDb> db_;
  std::unique_ptr<AppendStatements> append_;  // prepared on first append(), before db_ closes
  int opened_version_ = 0;
  std::vector<int64_t> interrupted_;
};

// Unix time now, in seconds (fractional).
double unix_now();

}  // namespace tr::store

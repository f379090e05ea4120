// SPDX-License-Identifier: GPL-3.0-or-later
// RunRecorder: records one training run into the run store without slowing
// the training thread. push_step()/push_epoch() only append to a buffer
// under a short lock; a writer thread commits what has gathered in one
// transaction every flush interval (or sooner when many rows wait), and
// finish() commits the rest and the final status. When the store refuses a
// write (a full disk, a read-only or deleted file, a lock held too long) the
// rows wait in memory, bounded and counted, and go in once it takes them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <renaissance/run_store.h>

namespace tr::store {

struct RecorderStats {
  int64_t commits = 0;
  int64_t steps = 0, epochs = 0;  // rows committed
  double writer_cpu_seconds = 0;  // CPU time of the writer thread
  int64_t failed_commits = 0;     // attempts the store refused
  int64_t waiting_rows = 0;       // rows waiting for the store now
  int64_t most_waiting_rows = 0;  // the most that ever waited at once
  int64_t recoveries = 0;         // times the store took writes again after refusing them
  int64_t restored = 0;           // times the store's file was deleted and written back
  // Rows given up: steps past max_waiting_steps, and what still waited when
  // finish() ran out of time.
  int64_t dropped_rows = 0;
};

struct RecorderOptions {
  std::chrono::milliseconds flush_interval{100};
  size_t batch_rows = 2000;  // wake the writer early when this many steps wait
  // While the store refuses writes at most this many steps (about 64 bytes
  // each) wait in memory; later ones are dropped and counted.
  size_t max_waiting_steps = 1'000'000;
  // How long finish() goes on trying to write what still waits.
  std::chrono::milliseconds finish_timeout{5000};
  // How long a write waits for another connection's lock before it counts
  // as refused.
  std::chrono::milliseconds busy_timeout{10000};
  // On the writer thread: the first time in the run the store refuses a
  // write (or its file is found deleted and restored), with what happened;
  // then once each time it takes the waiting rows again. Told once each,
  // not at every retry.
  std::function<void(const std::string& problem)> on_trouble{};
  std::function<void(const std::string& news)> on_recovered{};
};

class RunRecorder {
 public:
  // Opens (or creates) the store and inserts the run as running; throws
  // StoreError for a store that cannot be used, before any training starts.
  RunRecorder(const std::string& store_path, const RunStart& start, RecorderOptions options = {});
  // Takes up `run` again from a checkpoint (RunStore::resume_run): its
  // record continues from the checkpoint's step.
  RunRecorder(const std::string& store_path, int64_t run, const ResumeStart& resume,
              RecorderOptions options = {});
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;
  // Without finish(), the run ends as failed: whoever dropped it did not say how it ended.
  ~RunRecorder();

  int64_t run_id() const noexcept { return run_id_; }
  const std::string& store_path() const noexcept { return path_; }
  // The resumption this recorder began with (id 0 for a new run).
  const ResumeRecord& resumed() const noexcept { return resumed_; }

  // Never blocks on the store. Safe from any thread; ignored after finish().
  void push_step(const StepRecord& step);
  void push_epoch(EpochRecord epoch);
  void push_checkpoint(CheckpointRecord checkpoint);
  // The file of the weights the run ended with, recorded with its end by finish().
  void set_final_weights(const std::string& path);

  // Returns once the writer has tried everything pushed so far: committed,
  // or waiting for a store that refuses it (then the result is false).
  bool flush();
  // Commits the rest (trying for up to finish_timeout while the store
  // refuses), writes `status` (finished, stopped or failed, with `error`
  // for failed) and stops the writer. Returns what could not be recorded,
  // empty when everything went in in the end; recording problems never stop
  // training.
  std::string finish(RunStatus status, const std::string& error = {});

  // What the store refuses now (empty when it takes writes), for a progress display.
  std::string error() const;
  RecorderStats stats() const;

 private:
  struct Waiting {
    std::vector<StepRecord> steps;
    std::vector<EpochRecord> epochs;
    std::vector<CheckpointRecord> checkpoints;
    bool empty() const { return steps.empty() && epochs.empty() && checkpoints.empty(); }
    size_t rows() const { return steps.size() + epochs.size() + checkpoints.size(); }
  };

  void start_writer();
  void writer_loop();
  // Before a write: the store's file written back if it was deleted (its
  // new path returned), or a fresh connection after a failure.
  std::string ready_store();
  // Writes what waits, emptying it; the store's complaint when it refuses.
  std::string commit(Waiting& w, std::string* restored_to);
  std::unique_ptr<RunStore> open_store() const;

  std::string path_;
  RecorderOptions options_;
  std::unique_ptr<RunStore> store_;  // the writer thread's alone once it runs
  int64_t run_id_ = 0;
  ResumeRecord resumed_;
  bool reopen_ = false;  // the last commit failed: a fresh connection before the next

  mutable std::mutex mutex_;
  std::condition_variable wake_;       // the writer waits here
  std::condition_variable committed_;  // flush() waits here
  std::vector<StepRecord> steps_;
  std::vector<EpochRecord> epochs_;
  std::vector<CheckpointRecord> checkpoints_;
  uint64_t pushed_ = 0;    // rows pushed so far
  uint64_t written_ = 0;   // rows the writer has taken (committed or waiting)
  uint64_t flush_to_ = 0;  // a flush() waits for written_ to reach this
  bool stop_ = false;
  std::string trouble_;      // what the store refuses now
  std::string first_error_;  // the first refusal, for finish()
  std::string lost_;         // what was given up, for finish()
  RecorderStats stats_;
  std::thread writer_;
  bool finished_ = false;
  std::string final_weights_;  // for finish(), under mutex_
};

}  // namespace tr::store

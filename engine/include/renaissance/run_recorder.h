// SPDX-License-Identifier: GPL-3.0-or-later
// RunRecorder: records one training run into the run store without slowing
// the training thread. push_step()/push_epoch() only append to a buffer
// under a short lock; a writer thread commits what has gathered in one
// transaction every flush interval (or sooner when many rows wait), and
// finish() commits the rest and the final status.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <renaissance/run_store.h>

namespace tr::store {

struct RecorderOptions {
  std::chrono::milliseconds flush_interval{100};
  size_t batch_rows = 2000;  // wake the writer early when this many steps wait
};

struct RecorderStats {
  int64_t commits = 0;
  int64_t steps = 0, epochs = 0;  // rows committed
  double writer_cpu_seconds = 0;  // CPU time of the writer thread
};

class RunRecorder {
 public:
  // Opens (or creates) the store and inserts the run as running; throws
  // StoreError for a store that cannot be used, before any training starts.
  RunRecorder(const std::string& store_path, const RunStart& start, RecorderOptions options = {});
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;
  // Without finish(), the run ends as failed: whoever dropped it did not say how it ended.
  ~RunRecorder();

  int64_t run_id() const noexcept { return run_id_; }
  const std::string& store_path() const noexcept { return path_; }

  // Never blocks on the store. Safe from any thread; ignored after finish().
  void push_step(const StepRecord& step);
  void push_epoch(EpochRecord epoch);
  void push_checkpoint(CheckpointRecord checkpoint);

  // Returns once everything pushed so far is committed.
  void flush();
  // Commits the rest, writes `status` (finished, stopped or failed, with
  // `error` for failed) and stops the writer. Returns the first error the
  // writer met (empty when every commit went through); recording errors
  // never stop training, they drop the rows they could not write.
  std::string finish(RunStatus status, const std::string& error = {});

  // The writer's first error so far, for a progress display.
  std::string error() const;
  RecorderStats stats() const;

 private:
  void writer_loop();

  std::string path_;
  RunStore store_;  // the writer thread's alone once it runs
  int64_t run_id_ = 0;
  RecorderOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;       // the writer waits here
  std::condition_variable committed_;  // flush() waits here
  std::vector<StepRecord> steps_;
  std::vector<EpochRecord> epochs_;
  std::vector<CheckpointRecord> checkpoints_;
  uint64_t pushed_ = 0;    // rows pushed so far
  uint64_t written_ = 0;   // rows the writer has taken and committed (or dropped)
  uint64_t flush_to_ = 0;  // a flush() waits for written_ to reach this
  bool stop_ = false;
  std::string error_;
  RecorderStats stats_;
  std::thread writer_;
  bool finished_ = false;
};

}  // namespace tr::store

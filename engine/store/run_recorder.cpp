// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_recorder.h>

#include <time.h>

#include <exception>
#include <utility>

namespace tr::store {

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

RunRecorder::RunRecorder(const std::string& store_path, const RunStart& start,
                         RecorderOptions options)
    : path_(store_path), store_(store_path), options_(options) {
  run_id_ = store_.begin_run(start);
  steps_.reserve(options_.batch_rows);
  writer_ = std::thread([this] { writer_loop(); });
}

RunRecorder::~RunRecorder() {
  if (finished_) return;
  try {
    finish(RunStatus::Failed, "the recorder was closed before the run ended");
  } catch (...) {
    // A destructor has nowhere to report to; the next open sees a live
    // process's run as running, a dead one's as interrupted.
  }
}

void RunRecorder::push_step(const StepRecord& step) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) return;  // finished: nobody would write it
  steps_.push_back(step);
  ++pushed_;
  // Waking the writer on every step would cost a syscall per step; it wakes
  // on its own every flush interval.
  if (steps_.size() == options_.batch_rows) wake_.notify_one();
}

void RunRecorder::push_epoch(EpochRecord epoch) {
  if (epoch.ended_at <= 0) epoch.ended_at = unix_now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) return;
  epochs_.push_back(std::move(epoch));
  ++pushed_;
  wake_.notify_one();  // an epoch is rare and the row a reader waits for
}

void RunRecorder::push_checkpoint(CheckpointRecord checkpoint) {
  if (checkpoint.created_at <= 0) checkpoint.created_at = unix_now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) return;
  checkpoints_.push_back(std::move(checkpoint));
  ++pushed_;
  wake_.notify_one();
}

void RunRecorder::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!writer_.joinable()) return;
  flush_to_ = pushed_;
  wake_.notify_one();
  committed_.wait(lock, [&] { return written_ >= flush_to_; });
}

void RunRecorder::writer_loop() {
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  std::vector<CheckpointRecord> checkpoints;
  steps.reserve(options_.batch_rows);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, options_.flush_interval, [&] {
      return stop_ || flush_to_ > written_ || steps_.size() >= options_.batch_rows;
    });
    // Swapping keeps both buffers' capacity: no allocation per step in steady state.
    steps.swap(steps_);
    epochs.swap(epochs_);
    checkpoints.swap(checkpoints_);
    const uint64_t taken = pushed_;
    const bool stopping = stop_;
    const bool failed = !error_.empty();
    lock.unlock();
    std::string error;
    if (!failed && (!steps.empty() || !epochs.empty() || !checkpoints.empty())) {
      try {
        store_.append(run_id_, steps, epochs);
        for (const CheckpointRecord& c : checkpoints) store_.add_checkpoint(run_id_, c);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    const double cpu = thread_cpu_seconds();
    lock.lock();
    if (!failed && error.empty() && (!steps.empty() || !epochs.empty())) {
      ++stats_.commits;
      stats_.steps += static_cast<int64_t>(steps.size());
      stats_.epochs += static_cast<int64_t>(epochs.size());
    }
    stats_.writer_cpu_seconds = cpu;
    if (error_.empty()) error_ = error;
    steps.clear();
    epochs.clear();
    checkpoints.clear();
    written_ = taken;
    committed_.notify_all();
    if (stopping && steps_.empty() && epochs_.empty() && checkpoints_.empty()) return;
  }
}

std::string RunRecorder::finish(RunStatus status, const std::string& error) {
  if (finished_) throw std::logic_error("RunRecorder::finish called twice");
  finished_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    wake_.notify_one();
  }
  writer_.join();
  // The writer is gone: the store is this thread's again.
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    store_.end_run(run_id_, status, error);
  } catch (const std::exception& e) {
    if (error_.empty()) error_ = e.what();
  }
  return error_;
}

std::string RunRecorder::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

RecorderStats RunRecorder::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tr::store

// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_recorder.h>

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <exception>
#include <utility>

namespace tr::store {

namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string rows_text(int64_t n) {
  return std::to_string(n) + (n == 1 ? " row" : " rows");
}

// A writer checks first: SQLite would open a read-only file for reading,
// leave its -wal and -shm beside it and fail only at the first insert.
void check_writable(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0 || ::access(path.c_str(), W_OK) == 0) return;
  const int e = errno;
  throw StoreError("the run store '" + path + "' is read-only (" +
                   std::generic_category().message(e) +
                   "), so no run can be recorded in it; make it writable, or record the run "
                   "in another store");
}

}  // namespace

RunRecorder::RunRecorder(const std::string& store_path, const RunStart& start,
                         RecorderOptions options)
    : path_(store_path), options_(std::move(options)) {
  check_writable(path_);
  store_ = open_store();
  run_id_ = store_->begin_run(start);
  start_writer();
}

RunRecorder::RunRecorder(const std::string& store_path, int64_t run, const ResumeStart& resume,
                         RecorderOptions options)
    : path_(store_path), options_(std::move(options)), run_id_(run) {
  check_writable(path_);
  store_ = open_store();
  resumed_ = store_->resume_run(run, resume);
  start_writer();
}

std::unique_ptr<RunStore> RunRecorder::open_store() const {
  auto s = std::make_unique<RunStore>(path_);
  s->set_busy_timeout(options_.busy_timeout);
  return s;
}

void RunRecorder::start_writer() {
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
  // Stamped once, here: a retried insert is recognised by it.
  if (checkpoint.created_at <= 0) checkpoint.created_at = unix_now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) return;
  checkpoints_.push_back(std::move(checkpoint));
  ++pushed_;
  wake_.notify_one();
}

bool RunRecorder::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!writer_.joinable()) return trouble_.empty();
  flush_to_ = pushed_;
  wake_.notify_one();
  committed_.wait(lock, [&] { return written_ >= flush_to_; });
  return trouble_.empty() && stats_.waiting_rows == 0;
}

std::string RunRecorder::ready_store() {
  // First: a fresh connection to a deleted file's path would start an empty store there.
  if (store_->file_moved()) {
    reopen_ = false;
    return store_->restore_moved_file();
  }
  if (reopen_) {
    // A connection that met an I/O error may keep failing after the cause
    // is gone; a fresh one is cheap. Until one opens, the old one retries.
    try {
      store_ = open_store();
    } catch (const std::exception&) {
    }
    reopen_ = false;
  }
  return {};
}

std::string RunRecorder::commit(Waiting& w, std::string* restored_to) {
  try {
    *restored_to = ready_store();
    if (!w.steps.empty() || !w.epochs.empty()) {
      store_->append(run_id_, w.steps, w.epochs);
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.commits;
      stats_.steps += static_cast<int64_t>(w.steps.size());
      stats_.epochs += static_cast<int64_t>(w.epochs.size());
      w.steps.clear();
      w.epochs.clear();
    }
    while (!w.checkpoints.empty()) {
      store_->add_checkpoint(run_id_, w.checkpoints.front());
      w.checkpoints.erase(w.checkpoints.begin());
    }
    return {};
  } catch (const std::exception& e) {
    reopen_ = true;
    return e.what();
  }
}

void RunRecorder::writer_loop() {
  Waiting w;
  w.steps.reserve(options_.batch_rows);
  bool told = false;  // the user heard of a refusal in this run
  Clock::time_point give_up{};
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (stop_ && !w.empty())
      wake_.wait_for(lock, options_.flush_interval);  // a retry, not a spin
    else
      wake_.wait_for(lock, options_.flush_interval, [&] {
        return stop_ || flush_to_ > written_ || steps_.size() >= options_.batch_rows;
      });
    // Appending keeps the order; the swap for an empty wait keeps both
    // buffers' capacity: no allocation per step in steady state.
    if (w.steps.empty())
      w.steps.swap(steps_);
    else
      w.steps.insert(w.steps.end(), steps_.begin(), steps_.end());
    steps_.clear();
    w.epochs.insert(w.epochs.end(), std::make_move_iterator(epochs_.begin()),
                    std::make_move_iterator(epochs_.end()));
    epochs_.clear();
    w.checkpoints.insert(w.checkpoints.end(), std::make_move_iterator(checkpoints_.begin()),
                         std::make_move_iterator(checkpoints_.end()));
    checkpoints_.clear();
    const uint64_t taken = pushed_;
    const bool stopping = stop_;
    if (stopping && give_up == Clock::time_point{})
      give_up = Clock::now() + options_.finish_timeout;
    // Past the bound the newest steps go: the curve so far stays whole.
    if (w.steps.size() > options_.max_waiting_steps) {
      const size_t over = w.steps.size() - options_.max_waiting_steps;
      w.steps.erase(w.steps.end() - static_cast<std::ptrdiff_t>(over), w.steps.end());
      stats_.dropped_rows += static_cast<int64_t>(over);
      lost_ = rows_text(stats_.dropped_rows) +
              " of steps were dropped while the store refused "
              "writes (more than " +
              std::to_string(options_.max_waiting_steps) + " waited)";
    }
    lock.unlock();

    std::string error, restored_to;
    const size_t before = w.rows();
    if (!w.empty()) error = commit(w, &restored_to);
    const double cpu = thread_cpu_seconds();

    lock.lock();
    stats_.writer_cpu_seconds = cpu;
    std::string trouble_news, recovered_news;
    if (!restored_to.empty()) {
      ++stats_.restored;
      trouble_news = "the run store '" + path_ + "' was deleted while run " +
                     std::to_string(run_id_) +
                     " was recorded; everything it held was written "
                     "back to '" +
                     restored_to + "', and the run is recorded there";
    }
    if (!error.empty()) {
      ++stats_.failed_commits;
      if (first_error_.empty()) first_error_ = error;
      if (trouble_.empty() && !told) {
        told = true;
        trouble_news = "the run store does not take writes (" + error +
                       "); training goes on and its rows wait in memory until it does";
      }
      trouble_ = error;
    } else if (!trouble_.empty()) {
      ++stats_.recoveries;
      recovered_news = "the run store '" + path_ + "' takes writes again: the " +
                       rows_text(static_cast<int64_t>(before)) + " that waited are recorded";
      trouble_.clear();
    }
    stats_.waiting_rows = static_cast<int64_t>(w.rows());
    stats_.most_waiting_rows = std::max(stats_.most_waiting_rows, stats_.waiting_rows);
    const bool out_of_time = stopping && !w.empty() && Clock::now() >= give_up;
    if (out_of_time) {
      stats_.dropped_rows += static_cast<int64_t>(w.rows());
      lost_ = rows_text(stats_.dropped_rows) + " could not be recorded: " + trouble_;
      stats_.waiting_rows = 0;
      w = {};
    }
    written_ = taken;
    committed_.notify_all();
    const bool done =
        stopping && w.empty() && steps_.empty() && epochs_.empty() && checkpoints_.empty();
    if (!trouble_news.empty() || !recovered_news.empty()) {
      lock.unlock();
      if (!trouble_news.empty() && options_.on_trouble) options_.on_trouble(trouble_news);
      if (!recovered_news.empty() && options_.on_recovered) options_.on_recovered(recovered_news);
      lock.lock();
    }
    if (done) return;
  }
}

void RunRecorder::set_final_weights(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  final_weights_ = path;
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
  // The writer is gone: the store is this thread's again. The status is
  // what a reader looks at first, so it gets the same patience as the rows.
  const auto give_up = Clock::now() + options_.finish_timeout;
  std::string end_error;
  for (;;) {
    try {
      ready_store();
      std::string weights;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        weights = final_weights_;
      }
      if (!weights.empty()) store_->set_final_weights(run_id_, weights);
      store_->end_run(run_id_, status, error);
      end_error.clear();
      break;
    } catch (const std::exception& e) {
      end_error = e.what();
      reopen_ = true;
    }
    if (Clock::now() >= give_up) break;
    std::this_thread::sleep_for(options_.flush_interval);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out = lost_;
  if (!end_error.empty())
    out += (out.empty() ? "" : "; ") + std::string("the run's end could not be recorded: ") +
           end_error;
  return out;
}

std::string RunRecorder::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trouble_;
}

RecorderStats RunRecorder::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace tr::store

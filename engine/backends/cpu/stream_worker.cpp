// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/stream_worker.h"

#include <utility>

#include "backends/cpu/cpu_threads.h"

namespace tr::cpu {

StreamWorker::StreamWorker() : thread_([this] { run(); }) {}

StreamWorker::~StreamWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StreamWorker::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void StreamWorker::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return tasks_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void StreamWorker::rethrow_error() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    e = std::exchange(error_, nullptr);
  }
  if (e) std::rethrow_exception(e);
}

void StreamWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop requested and nothing left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    std::exception_ptr failure;
    try {
      apply_cpu_threads();
      task();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (failure && !error_) error_ = failure;
    busy_ = false;
    if (tasks_.empty()) idle_.notify_all();
  }
}

}  // namespace tr::cpu

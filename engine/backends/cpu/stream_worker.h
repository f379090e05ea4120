// SPDX-License-Identifier: GPL-3.0-or-later
// StreamWorker: one CPU "stream": a thread that runs its tasks strictly in
// the order they were enqueued, like a CUDA stream. A task that throws stops
// nothing else; the error is kept and rethrown at the next synchronize.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace tr::cpu {

class StreamWorker {
 public:
  StreamWorker();
  ~StreamWorker();
  StreamWorker(const StreamWorker&) = delete;
  StreamWorker& operator=(const StreamWorker&) = delete;

  void enqueue(std::function<void()> task);
  // Blocks until every task enqueued so far has run; rethrows the first error.
  void synchronize();
  // Rethrows (and forgets) the first error of the tasks run so far, without waiting.
  void rethrow_error();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace tr::cpu

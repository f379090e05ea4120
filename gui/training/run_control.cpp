// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/run_control.h"

#include <chrono>

namespace tr::gui {

void RunControl::requestStop() {
  {
    // Under the lock, so a waiter cannot check the flag and then miss the wake-up.
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
}

void RunControl::pause() {
  std::lock_guard<std::mutex> lock(mutex_);
  paused_ = true;
}

void RunControl::resume() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = false;
  }
  wake_.notify_all();
}

bool RunControl::pauseRequested() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return paused_;
}

double RunControl::waitWhilePaused() {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [this] { return !paused_ || stop_.load(); });
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace tr::gui

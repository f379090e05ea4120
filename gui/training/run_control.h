// SPDX-License-Identifier: GPL-3.0-or-later
// RunControl: what the GUI thread asks of a run that the training thread
// obeys between steps: a stop flag the trainer checks before every step,
// and a pause gate the rank-0 step callback waits at. A stop releases a
// paused run, so it ends within one step either way.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace tr::gui {

class RunControl {
 public:
  void requestStop();
  bool stopRequested() const { return stop_.load(); }
  // For TrainOptions::stop.
  const std::atomic<bool>* stopFlag() const { return &stop_; }

  void pause();
  void resume();
  bool pauseRequested() const;
  // Blocks the calling (training) thread while paused and not stopped.
  // Returns the seconds it waited.
  double waitWhilePaused();

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool paused_ = false;
};

}  // namespace tr::gui

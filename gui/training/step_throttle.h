// SPDX-License-Identifier: GPL-3.0-or-later
// StepThrottle: gathers the step samples of a fast run so the GUI gets them
// in batches (at most one delivery per interval) instead of one event per
// step, while a slow step is still handed over as soon as it is done.
#pragma once

#include <chrono>
#include <mutex>
#include <vector>

#include "training/step_sample.h"

namespace tr::gui {

class StepThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StepThrottle(std::chrono::milliseconds interval = std::chrono::milliseconds(30))
      : interval_(interval) {}

  // Adds a sample; returns the batch to deliver now (empty: keep gathering).
  // A step at least as long as the interval is delivered right away: steps
  // that slow cannot flood the event loop, and holding one back would delay
  // it by a whole step.
  std::vector<StepSample> add(const StepSample& sample, Clock::time_point now = Clock::now());
  // Everything gathered so far (before a pause, an epoch's end, the run's end).
  std::vector<StepSample> take(Clock::time_point now = Clock::now());

 private:
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::vector<StepSample> pending_;
  Clock::time_point last_delivery_{};
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/step_throttle.h"

#include <utility>

namespace tr::gui {

std::vector<StepSample> StepThrottle::add(const StepSample& sample, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(sample);
  const auto slow_step = std::chrono::duration<double>(interval_).count();
  if (now - last_delivery_ < interval_ && sample.seconds < slow_step) return {};
  last_delivery_ = now;
  return std::exchange(pending_, {});
}

std::vector<StepSample> StepThrottle::take(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  last_delivery_ = now;
  return std::exchange(pending_, {});
}

}  // namespace tr::gui

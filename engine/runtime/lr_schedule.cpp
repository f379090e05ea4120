// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tr {

double learning_rate(const OptimizerSpec& optimizer, const ScheduleSpec& schedule,
                     int64_t total_epochs, double epoch_position) {
  const double base = optimizer.lr;
  if (schedule.warmup_epochs > 0 && epoch_position < schedule.warmup_epochs)
    return base * (epoch_position + 1e-9) / schedule.warmup_epochs;
  switch (schedule.kind) {
    case ScheduleKind::Constant:
      return base;
    case ScheduleKind::Step: {
      const auto steps = static_cast<int64_t>(std::floor(
          epoch_position / static_cast<double>(std::max<int64_t>(1, schedule.step_epochs))));
      return base * std::pow(schedule.gamma, static_cast<double>(steps));
    }
    case ScheduleKind::Cosine: {
      const double span =
          std::max(1e-9, static_cast<double>(total_epochs) - schedule.warmup_epochs);
      const double t = std::clamp((epoch_position - schedule.warmup_epochs) / span, 0.0, 1.0);
      return schedule.min_lr +
             (base - schedule.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
    }
  }
  return base;
}

}  // namespace tr

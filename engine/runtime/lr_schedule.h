// SPDX-License-Identifier: GPL-3.0-or-later
// The learning rate at a point of training: constant, step or cosine decay,
// each with an optional linear warm-up, evaluated per step from the epoch
// position so that a partial last batch needs no special case.
#pragma once

#include <cstdint>

#include <renaissance/project.h>

namespace tr {

// `epoch_position`: epochs completed, fractional (step / steps_per_epoch).
double learning_rate(const OptimizerSpec& optimizer, const ScheduleSpec& schedule,
                     int64_t total_epochs, double epoch_position);

}  // namespace tr

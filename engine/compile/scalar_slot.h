// SPDX-License-Identifier: GPL-3.0-or-later
// The S_SCALARS tensor's slots: the step's few numbers that host and
// kernels share (learning rate, step, overflow flag, loss scale, ...).
#pragma once

namespace tr {

// Positions inside the S_SCALARS tensor. The host writes the first three
// (HOST_WRITTEN) with one small copy at the start of every step; the rest
// live on the device (the loss scale moves there under AMP).
enum class ScalarSlot : int {
  LR,
  STEP,
  OVERFLOW,
  LOSS_SCALE,
  INV_LOSS_SCALE,
  CLEAN_STEPS,
  ADAM_CORR1,
  ADAM_CORR2,
  // Optimizer updates applied, this step's included: a step AMP skips for an
  // overflow does not count, so Adam's bias correction and the first-step
  // momentum follow the updates that happened (as with torch's GradScaler).
  UPDATES,
  COUNT
};
inline constexpr int kHostWrittenScalars = 3;

// The AMP loss scale's policy, which every backend's loss-scale update
// follows: it doubles after this many clean steps in a row (torch
// GradScaler's growth_interval) and halves on an overflow.
inline constexpr int kLossScaleGrowthInterval = 2000;

}  // namespace tr

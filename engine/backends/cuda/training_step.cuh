// SPDX-License-Identifier: GPL-3.0-or-later
// The step S_SCALARS holds, read on the device and rounded as the CPU
// kernels round it (detail::training_step): dropout masks follow it.
#pragma once

#include <cstdint>

namespace tr::cuda {

// The CPU's llround of a positive step: half away from zero, as llroundf.
__device__ inline uint64_t step_of(const float* step) {
  const float s = step ? *step : 0.0f;
  return s > 0.0f ? static_cast<uint64_t>(llroundf(s)) : 0;
}

}  // namespace tr::cuda

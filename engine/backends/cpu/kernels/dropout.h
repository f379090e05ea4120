// SPDX-License-Identifier: GPL-3.0-or-later
// Dropout on the CPU with counter-based masks.
//
// A mask is a pure function of (seed, step, layer, element), so any thread,
// any backend and any number of ranks reproduce it without carrying RNG state.
#pragma once

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x] out [y, mask (int8: 1 kept, 0 dropped)]; y = x * mask / (1 - p)
void dropout_fwd(const KernelArgs& a);
// in [mask, dy] out [dx]
void dropout_bwd(const KernelArgs& a);

// Whether element `index` of layer `layer`'s mask is kept at `step`. The index
// counts compact NHWC elements of the global batch (rank * local elements +
// local index), so a mask does not depend on the world size.
bool dropout_keeps(uint64_t seed, uint64_t step, int layer, uint64_t index, double p) noexcept;

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers the CPU kernels share: optional outputs and the overwrite-or-add store.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cpu::detail {

// Channel blocks for per-channel statistics: fixed stack arrays, so kernels
// never allocate, and a block of rows stays in L1 while it is reduced.
inline constexpr int64_t kChannelBlock = 256;

// An output slot can be absent (a gradient towards the input node is never
// materialised), so kernels skip it instead of writing through null.
inline bool has_out(const KernelArgs& a, size_t i) {
  return i < a.out.size() && a.out[i].data != nullptr;
}

// Writes f(i) for i in [0, n) into out, adding when the node accumulates
// into a gradient slot another consumer already wrote. The branch sits
// outside the loop so both loops vectorise.
template <class F>
inline void store(bool accumulate, float* out, int64_t n, F f) {
  if (accumulate) {
    for (int64_t i = 0; i < n; ++i) out[i] += f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(i);
  }
}

}  // namespace tr::cpu::detail

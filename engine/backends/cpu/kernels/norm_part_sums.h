// SPDX-License-Identifier: GPL-3.0-or-later
// LayerNorm's scale and shift gradients from per-part partial sums
// (parallel.h's fixed parts): our own kernel's (double partials) and the
// native BF16 one's (FP32 partials) combine them the same way.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/kernel_util.h"

namespace tr::cpu::detail {

// Outputs 0 and 1 of `a` (FP32, c values each) get (or have added) the sums
// over the parts of `sums`, laid out a part at a time as [output 0's c
// values, output 1's c values], summed in part order.
template <class T>
void write_part_sums(const KernelArgs& a, const T* sums, int parts, int64_t c) {
  for (int k = 0; k < 2; ++k) {
    if (!has_out(a, static_cast<size_t>(k))) continue;
    float* out = a.out[static_cast<size_t>(k)].f32();
    const bool acc = a.accumulate(static_cast<size_t>(k));
    for (int64_t i = 0; i < c; ++i) {
      T v = 0;
      for (int p = 0; p < parts; ++p) v += sums[(static_cast<int64_t>(p) * 2 + k) * c + i];
      out[i] = acc ? static_cast<float>(out[i] + v) : static_cast<float>(v);
    }
  }
}

}  // namespace tr::cpu::detail

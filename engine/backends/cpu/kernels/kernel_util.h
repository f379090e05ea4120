// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers the CPU kernels share: optional outputs, the operand check of the
// native bfloat16 paths and the overwrite-or-add store.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "runtime/kernel_args.h"

namespace tr::cpu::detail {

// Channel blocks for per-channel statistics: fixed stack arrays, so kernels
// never allocate, and a block of rows stays in L1 while it is reduced.
inline constexpr int64_t kChannelBlock = 256;

// Calls f with a channel count as a constant where it is a channel block's
// (8 or 16: maps in channel blocks, DTensor::channel_block), so a loop over
// it is one or two vector operations with no remainder; otherwise as it is.
// The same arithmetic either way.
template <class F>
void with_channel_count(int64_t c, F&& f) {
  if (c == 8) return f(std::integral_constant<int64_t, 8>{});
  if (c == 16) return f(std::integral_constant<int64_t, 16>{});
  f(c);
}

// An output slot can be absent (a gradient towards the input node is never
// materialised), so kernels skip it instead of writing through null.
// The step S_SCALARS holds (dropout masks follow it), 0 before the first.
inline uint64_t training_step(const KernelArgs& a) noexcept {
  const float s = a.scalars ? a.scalar(ScalarSlot::STEP) : 0.0f;
  return s > 0.0f ? static_cast<uint64_t>(std::llround(s)) : 0;
}

inline bool has_out(const KernelArgs& a, size_t i) {
  return i < a.out.size() && a.out[i].data != nullptr;
}

// Whether the kernels that read bfloat16 as it lies (instead of staging it,
// half_staging.h) can take `a`: exactly `ins` inputs and `outs` outputs,
// those named in `bf16_in` / `bf16_out` (indices) compact bfloat16 and the
// rest compact FP32; an absent output (null data) passes.
inline bool compact_operands(const KernelArgs& a, size_t ins, size_t outs,
                             std::initializer_list<size_t> bf16_in,
                             std::initializer_list<size_t> bf16_out) {
  if (a.in.size() != ins || a.out.size() != outs) return false;
  auto named = [](std::initializer_list<size_t> l, size_t i) {
    return std::find(l.begin(), l.end(), i) != l.end();
  };
  auto fits = [](const TensorArg& t, bool bf16) {
    return t.desc && t.desc->is_compact() && t.desc->dtype == (bf16 ? DType::BF16 : DType::FP32);
  };
  for (size_t i = 0; i < ins; ++i)
    if (!a.in[i].data || !fits(a.in[i], named(bf16_in, i))) return false;
  for (size_t i = 0; i < outs; ++i)
    if (a.out[i].data && !fits(a.out[i], named(bf16_out, i))) return false;
  return true;
}

// An add's two gradients when both are one slot (x + x): g onto what the
// slot holds (`add0`) or onto nothing, then g again (`add1`) or g alone,
// in float, so that 16-bit storage rounds it once (as staging does).
inline float onto_one_slot(bool add0, bool add1, float slot, float g) {
  const float first = add0 ? slot + g : g;
  return add1 ? first + g : g;
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

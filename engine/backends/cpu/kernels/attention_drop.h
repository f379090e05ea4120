// SPDX-License-Identifier: GPL-3.0-or-later
// A CPU attention launch's dropout on the probabilities: the layer's
// arguments (runtime/attention_dropout_args.h) with what the CPU adds, the
// step and where the launch's samples sit in the global batch, and the keep
// factors of 16 keys at a time. Shared by our own attention kernels and the
// AMX ones, so that both draw the same mask.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/kernel_util.h"
#include "core/attention_dropout.h"
#include "runtime/attention_dropout_args.h"

namespace tr::cpu::detail {

inline constexpr int64_t kKeepLanes = 16;

struct AttentionDrop : AttentionDropoutArgs {
  uint64_t step = 0;
  const KernelArgs* args = nullptr;
  int64_t batch = 0;  // the launch's samples
  // The key of sample n's head h (n of this launch).
  uint32_t key(int64_t n, int64_t h, int64_t heads) const {
    const auto pair = static_cast<uint64_t>(args->global_sample(n, batch) * heads + h);
    return attention_dropout_key(seed, step, layer, pair);
  }
};

inline AttentionDrop attention_drop(const KernelArgs& a, int64_t batch, bool training) {
  AttentionDrop d;
  static_cast<AttentionDropoutArgs&>(d) = attention_dropout_args(a, training);
  d.step = training_step(a);
  d.args = &a;
  d.batch = batch;
  return d;
}

// The keep factors (scale, or 0 where dropped) of one query's keys
// [j, j + 16): `index` is query * tokens + j (indices wrap past 65536 tokens,
// which leaves the draws distinct enough for a mask). A plain lane loop,
// which the compiler turns into vector integer arithmetic.
inline void keep_factors(const AttentionDrop& d, uint32_t key, uint32_t index, float* f) {
  for (int64_t l = 0; l < kKeepLanes; ++l)
    f[l] = attention_dropout_draw(key, index + static_cast<uint32_t>(l)) >= d.threshold ? d.scale
                                                                                        : 0.0f;
}

}  // namespace tr::cpu::detail

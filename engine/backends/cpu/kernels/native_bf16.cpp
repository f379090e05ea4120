// SPDX-License-Identifier: GPL-3.0-or-later
// Whether this CPU runs the kernels written for its bfloat16 instructions.
#include "backends/cpu/kernels/native_bf16.h"

#include "core/cpu_features.h"

namespace tr::cpu {

bool native_bf16_usable() noexcept {
  static const bool usable = detect_cpu_bf16().avx512_bf16 && cpu_runs_x86_64_v4();
  return usable;
}

}  // namespace tr::cpu

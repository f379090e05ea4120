// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU's bfloat16 instructions, as the core detects them and the device
// scan reports them: BF16 training on the CPU needs one of them.
#pragma once

namespace tr {

struct CpuBf16 {
  bool avx512_bf16 = false;  // AVX-512 BF16: conversions and dot products
  bool amx_bf16 = false;     // AMX: BF16 matrix tiles (enabled by the OS)
  bool any() const noexcept { return avx512_bf16 || amx_bf16; }
};

}  // namespace tr

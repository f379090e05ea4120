// SPDX-License-Identifier: GPL-3.0-or-later
// Attention on bfloat16 features with AMX matrix tiles: the CPU backend's
// kernels for a BF16 plan's ATTENTION_FWD and ATTENTION_BWD on a CPU with
// AMX-BF16, in place of our own FP32-arithmetic ones (attention.h).
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// Whether this process runs AMX code: the CPU has AMX-BF16 and AVX-512 BF16,
// and Linux granted the process the tile data state (asked once).
bool matrix_tiles_usable() noexcept;

// Whether the tile kernels take `a`: bfloat16 features and gradients, FP32
// log-sum-exp, every operand compact.
bool tile_attention_takes(const KernelArgs& a);

// in [qkv] out [o, lse when training], as attention_fwd; the products run
// on the tiles with bfloat16 operands (the probabilities rounded to
// bfloat16 before they weigh the values, as FlashAttention does on a GPU)
// and FP32 sums, the softmax in FP32.
void tile_attention_fwd(const KernelArgs& a);
// in [qkv, o, lse, do] out [dqkv], as attention_bwd.
void tile_attention_bwd(const KernelArgs& a);

}  // namespace tr::cpu

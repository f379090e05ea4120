// SPDX-License-Identifier: GPL-3.0-or-later
// CPU RANGE kernels other than optimizer updates: clears, copies, casts, checks, BN, EMA.
//
// One call covers a whole span of regions: elementwise over its bytes (padding
// is zero, so harmless), or per tensor where the op needs the owning layer.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// out_spans[*] = 0
void range_clear(const KernelArgs& a);
// in_spans[0] -> out_spans[0]
void range_copy(const KernelArgs& a);
// out_spans[0] += in_spans[0] (FP32)
void range_accumulate(const KernelArgs& a);
// in_spans[0] (in place, or into out_spans[0]) *= INV_LOSS_SCALE, unless OVERFLOW
void range_scale(const KernelArgs& a);
// out_spans[0], in place: each float its square root
void range_sqrt(const KernelArgs& a);
// scalars[OVERFLOW] = 1 when any FP32 in in_spans is inf or NaN; never clears it
void range_nan_check(const KernelArgs& a);
// FP32 span -> FP16 span of half the bytes, round to nearest even
void range_cast_fp32_to_fp16(const KernelArgs& a);
// FP16 span -> FP32 span of twice the bytes
void range_cast_fp16_to_fp32(const KernelArgs& a);
// FP32 span -> BF16 span of half the bytes, round to nearest even (the BF16 weight copy)
void range_cast_fp32_to_bf16(const KernelArgs& a);
// BF16 span -> FP32 span of twice the bytes (exact)
void range_cast_bf16_to_fp32(const KernelArgs& a);
// in [B_PREV_MEAN..B_PREV_VAR, W_BN_BIAS..W_BN_WEIGHT] out [B_EQ_SCALE..B_EQ_BIAS]:
// eq_scale = gamma / sqrt(running_var + eps), eq_bias = beta - running_mean * eq_scale
void range_bn_eq_params(const KernelArgs& a);
// in [W] out [E]: e = d*e + (1-d)*w, d = training->ema_decay
void range_ema_update(const KernelArgs& a);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// LayerNorm and GELU on bfloat16 features written for AVX-512 BF16 with
// FMA: the CPU backend's kernels for a BF16 plan's launches on a CPU that
// has it, in place of our own kernels (which give every build the same bits
// and so forgo FMA). FP32 arithmetic throughout; each output is computed by
// one thread, and LayerNorm's parameter gradients are summed in parts fixed
// by the sizes alone, so no result depends on the thread count.
#pragma once

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cpu {

// Whether the CPU runs AVX-512 BF16 (with F, BW, VL, DQ and FMA).
bool native_bf16_usable() noexcept;

// in [x, gamma, beta] out [y, saved (mean, 1/std a row)], as layer_norm_fwd.
bool native_layer_norm_takes(const KernelArgs& a);
void native_layer_norm_fwd(const KernelArgs& a);
// in [x, gamma, saved, dy] out [dgamma, dbeta, dx], as layer_norm_bwd.
void native_layer_norm_bwd(const KernelArgs& a);

// ACTIVATION_FWD in [x] out [y] and ACTIVATION_BWD in [x, dy] out [dx] of a
// GELU layer: erf by Abramowitz and Stegun's 7.1.26 (error below 1.5e-7).
bool native_gelu_takes(const KernelArgs& a);
void native_gelu_fwd(const KernelArgs& a);
void native_gelu_bwd(const KernelArgs& a);

// out[j] = the sum of column j of m (rows x c bfloat16), for a bias's
// gradient in oneDNN's dense kernels (dense.h).
void native_column_sums(const uint16_t* m, int64_t rows, int64_t c, float* out);

}  // namespace tr::cpu

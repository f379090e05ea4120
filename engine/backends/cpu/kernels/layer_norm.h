// SPDX-License-Identifier: GPL-3.0-or-later
// Layer normalisation on the CPU, matching torch.nn.LayerNorm over the
// channels of each position (a token's features): every row of C values of
// an NHWC tensor is normalised with its own mean and biased variance, then
// scaled and shifted per channel. gamma, beta, their gradients and the saved
// statistics are FP32 at every precision; x, y, dy and dx are the features'
// type.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x, gamma, beta] out [y, saved [N,H,W,2]: each row's mean and 1/std]
void layer_norm_fwd(const KernelArgs& a);
// in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
void layer_norm_bwd(const KernelArgs& a);

}  // namespace tr::cpu

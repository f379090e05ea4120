// SPDX-License-Identifier: GPL-3.0-or-later
// Batch normalisation on the CPU (NHWC, statistics over N, H, W per channel).
// gamma, beta and their gradients are FP32 at every precision; x, y, dy and
// dx are the features' type.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x, gamma, beta, prev_mean, prev_var]
// out [y, saved [1,1,2,C] (mean row, inv_std row), next_mean, next_var]
void bn_fwd_train(const KernelArgs& a);
// in [x, eq_scale, eq_bias] out [y]
void bn_fwd_infer(const KernelArgs& a);
// in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
void bn_bwd(const KernelArgs& a);

// The same with the ReLU that follows the BN applied to y (the BN output is
// never stored). The backward takes beta as well, to recompute the ReLU mask
// from x rather than read y, which the next layer's dX may have overwritten.
// in [x, gamma, beta, prev_mean, prev_var] out [relu(y), saved, next_mean, next_var]
void bn_relu_fwd_train(const KernelArgs& a);
// in [x, eq_scale, eq_bias] out [relu(y)]
void bn_relu_fwd_infer(const KernelArgs& a);
// in [x, gamma, beta, saved, d relu(y)] out [dgamma, dbeta, dx]
void bn_relu_bwd(const KernelArgs& a);

}  // namespace tr::cpu

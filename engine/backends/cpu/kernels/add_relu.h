// SPDX-License-Identifier: GPL-3.0-or-later
// The residual join's Add and its ReLU fused, on the CPU (compile/ops.h:
// ADD_RELU_FWD/BWD): FP32, FP16 or BF16 operands, one type per launch.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x0, x1] out [y = relu(x0 + x1)], the sum rounded to storage first
void add_relu_fwd(const KernelArgs& a);
// in [dy, y] out [dx0, dx1]: each (+)= dy where y > 0; dx0 and dx1 may be
// one tensor (both ports read one source), or absent; dx0 may be dy
void add_relu_bwd(const KernelArgs& a);

}  // namespace tr::cpu

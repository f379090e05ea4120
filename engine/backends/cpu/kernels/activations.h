// SPDX-License-Identifier: GPL-3.0-or-later
// ReLU, Tanh and SiLU on the CPU, forward and backward.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x] out [y]
void relu_fwd(const KernelArgs& a);
void tanh_fwd(const KernelArgs& a);
void silu_fwd(const KernelArgs& a);
// in [y, dy] out [dx]
void relu_bwd(const KernelArgs& a);
void tanh_bwd(const KernelArgs& a);
// in [x, dy] out [dx]: SiLU's derivative needs the input, not the output
void silu_bwd(const KernelArgs& a);

}  // namespace tr::cpu

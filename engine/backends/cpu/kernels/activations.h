// SPDX-License-Identifier: GPL-3.0-or-later
// ReLU and the activation family on the CPU, forward and backward.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x] out [y]
void relu_fwd(const KernelArgs& a);
// in [y, dy] out [dx]
void relu_bwd(const KernelArgs& a);
// NodeParams::activation: in [x] out [y]
void activation_fwd(const KernelArgs& a);
// in [y or x (activation_backward_reads_output), dy] out [dx]
void activation_bwd(const KernelArgs& a);

}  // namespace tr::cpu

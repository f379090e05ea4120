// SPDX-License-Identifier: GPL-3.0-or-later
// Runs a CPU kernel on feature maps whose channels lie in blocks
// (DTensor::channel_block), as its op's row of the op table says it takes
// them (ComputeOpInfo::channel_blocks): a per-channel windowed op sees each
// blocked map as N * C / b plain maps of b channels; an elementwise op needs
// every feature operand in one layout; an op that takes no blocks refuses
// them. The planner blocks only what the table allows, so a refusal here is
// a planner bug, reported with the op and the tensor.
#pragma once

#include "backends/cpu/own_kernels.h"
#include "runtime/kernel_args.h"

namespace tr::cpu {

void run_kernel(Kernel kernel, const KernelArgs& a);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Our own CPU kernels by op: every op but oneDNN's convolutions and matrix
// products (dense.h) and the backend's own copies and collectives.
#pragma once

#include "compile/ops.h"
#include "runtime/kernel_args.h"

namespace tr::cpu {

using Kernel = void (*)(const KernelArgs&);

// nullptr for an op that is not ours (H2D_INPUT, the dense ops).
Kernel own_compute_kernel(ComputeOp op) noexcept;
// nullptr for the collectives (the backend's communicator runs them).
Kernel own_range_kernel(RangeOp op) noexcept;

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's kernels: the plain reference every other backend's
// kernels are tested against, and fast enough to train on (oneDNN/OpenBLAS
// where they win). FP32, NHWC.
#pragma once

#include "compile/ops.h"
#include "runtime/kernel_args.h"

namespace tr::cpu {

using Kernel = void (*)(const KernelArgs&);

// The kernel for a compute op, or nullptr when the op is not a kernel
// (H2D_INPUT is a copy the backend does itself).
Kernel compute_kernel(ComputeOp op) noexcept;
// The kernel for a range op, or nullptr for collectives (the backend's job).
Kernel range_kernel(RangeOp op) noexcept;

}  // namespace tr::cpu

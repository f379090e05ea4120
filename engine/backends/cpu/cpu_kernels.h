// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's kernels: the plain reference every other backend's
// kernels are tested against, and fast enough to train on (oneDNN/OpenBLAS
// where they win). FP32 arithmetic on FP32 or FP16 storage, NHWC.
#pragma once

#include <cstdint>

#include "compile/ops.h"
#include "runtime/kernel_args.h"

namespace tr::cpu {

using Kernel = void (*)(const KernelArgs&);

// The kernel for a compute op, or nullptr when the op is not a kernel
// (H2D_INPUT is a copy the backend does itself).
Kernel compute_kernel(ComputeOp op) noexcept;
// The kernel for a range op, or nullptr for collectives (the backend's job).
Kernel range_kernel(RangeOp op) noexcept;
// Stream workspace bytes a compute kernel needs for `a` (FP16 operands are
// staged there as FP32); 0 for FP32 work and for range ops.
uint64_t kernel_workspace_bytes(const KernelArgs& a);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's kernels: the plain reference every other backend's
// kernels are tested against, and fast enough to train on (oneDNN/OpenBLAS
// where they win). FP32 arithmetic on FP32 or 16-bit storage, NHWC.
#pragma once

#include <cstdint>

#include "backends/cpu/kernel_builds.h"

namespace tr::cpu {

// The kernel for a compute op: oneDNN's dense ops, the rest from `own`
// (kernel_builds.h); nullptr when the op is not a kernel (H2D_INPUT is a
// copy the backend does itself).
Kernel compute_kernel(ComputeOp op, const OwnKernels& own = best_own_kernels()) noexcept;
// Whether `op` has an AMX tile kernel (tile_attention.h) for some launches.
bool has_tile_kernel(ComputeOp op) noexcept;
// The kernel of a launch: the AMX tile kernel where `matrix_tiles` is on and
// one takes the launch, else compute_kernel's or range_kernel's.
Kernel launch_kernel(const KernelArgs& a, const OwnKernels& own, bool matrix_tiles);
// The kernel for a range op, or nullptr for collectives (the backend's job).
Kernel range_kernel(RangeOp op, const OwnKernels& own = best_own_kernels()) noexcept;
// Stream workspace bytes a compute kernel needs for `a` (16-bit operands are
// staged there as FP32); 0 for FP32 work and for range ops.
uint64_t kernel_workspace_bytes(const KernelArgs& a);

}  // namespace tr::cpu

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
// Whether `op` has a kernel written for the CPU's bfloat16 instructions
// (AMX tiles: tile_attention.h; AVX-512 BF16 with FMA: native_bf16.h) for
// some of its BF16 launches, and whether this CPU has those instructions.
bool has_native_kernel(ComputeOp op) noexcept;
bool native_kernel_runs_here(ComputeOp op) noexcept;
// The kernel of a launch: the native BF16 kernel where `native_bf16` is on
// and one takes the launch, else compute_kernel's or range_kernel's.
Kernel launch_kernel(const KernelArgs& a, const OwnKernels& own, bool native_bf16);
// The kernel for a range op, or nullptr for collectives (the backend's job).
Kernel range_kernel(RangeOp op, const OwnKernels& own = best_own_kernels()) noexcept;
// Stream workspace bytes a compute kernel needs for `a` (16-bit operands are
// staged there as FP32); 0 for FP32 work and for range ops.
uint64_t kernel_workspace_bytes(const KernelArgs& a);

}  // namespace tr::cpu

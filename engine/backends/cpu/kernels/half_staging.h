// SPDX-License-Identifier: GPL-3.0-or-later
// FP16 storage with FP32 arithmetic for the CPU compute kernels. This CPU's
// oneDNN has no FP16 convolution or matmul at all (and its FP16 reorders run
// at ~30 ns a value), so a kernel with FP16 tensors runs its FP32 twin on
// FP32 copies staged in the stream's workspace: FP16 operands are widened
// (dropping the channel padding), FP16 results rounded back once to nearest
// even with the padding lanes zeroed. No memory is allocated on the way.
#pragma once

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cpu::detail {

using Fp32Kernel = void (*)(const KernelArgs&);

// Workspace bytes `a` needs to be staged; 0 when none of its tensors is FP16.
// A forked backward part stages only the tensors that part touches.
uint64_t fp16_staging_bytes(const KernelArgs& a);

// When a tensor of `a` is FP16: runs `kernel` on staged FP32 copies, writes
// the FP16 outputs back and returns true. Otherwise returns false and the
// caller runs its FP32 code. Throws std::invalid_argument when `a.workspace`
// is missing or smaller than fp16_staging_bytes(a).
bool run_fp16_staged(const KernelArgs& a, Fp32Kernel kernel);

}  // namespace tr::cpu::detail

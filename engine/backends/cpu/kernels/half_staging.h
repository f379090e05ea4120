// SPDX-License-Identifier: GPL-3.0-or-later
// 16-bit storage (FP16, BF16) with FP32 arithmetic for the CPU compute
// kernels. This CPU's oneDNN has no FP16 convolution or matmul at all (and
// its FP16 reorders run at ~30 ns a value), so a kernel with 16-bit tensors
// runs its FP32 twin on FP32 copies staged in the stream's workspace: 16-bit
// operands are widened (dropping the channel padding), 16-bit results rounded
// back once to nearest even with the padding lanes zeroed. No memory is
// allocated on the way.
#pragma once

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cpu::detail {

using Fp32Kernel = void (*)(const KernelArgs&);

// Workspace bytes `a` needs to be staged; 0 when none of its tensors is 16-bit.
// A forked backward part stages only the tensors that part touches.
uint64_t staging_bytes_16bit(const KernelArgs& a);

// When a tensor of `a` is 16-bit: runs `kernel` on staged FP32 copies, writes
// the 16-bit outputs back and returns true. Otherwise returns false and the
// caller runs its FP32 code. Throws std::invalid_argument when `a.workspace`
// is missing or smaller than staging_bytes_16bit(a).
bool run_16bit_staged(const KernelArgs& a, Fp32Kernel kernel);

// As run_16bit_staged, for an elementwise kernel (each output element a
// function of the same element of each input, all operands one shape): the
// rows go through `kernel` a chunk at a time, widened into per-thread
// buffers that stay in cache and narrowed back, the chunks split between the
// threads. The bits are the staged ones; the tensors' FP32 copies never go
// through memory. Operands of different shapes are staged whole.
bool run_16bit_elementwise(const KernelArgs& a, Fp32Kernel kernel);

// The same, a few samples at a time, for a kernel whose outputs for a
// sample depend on that sample of its inputs alone (pooling); every operand
// holds the same batch.
bool run_16bit_per_sample(const KernelArgs& a, Fp32Kernel kernel);

}  // namespace tr::cpu::detail

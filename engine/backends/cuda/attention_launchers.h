// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers of the CUDA attention kernels (attention_kernels.cu): each
// unpacks the resolved KernelArgs as the CPU twin in
// backends/cpu/kernels/attention.cpp does, honouring the accumulate flag.
// qkv, o, do and dqkv are FP32, FP16 or BF16 alike; lse is FP32. Other
// mixes, and heads that do not split the channels, throw
// std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda::attention {

// in [qkv] out [o, lse]
void fwd(const KernelArgs& a, cudaStream_t stream);
// in [qkv, o, lse, do] out [dqkv]
void bwd(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes of ATTENTION_BWD (each query's do . o); 0 for any
// other launch.
uint64_t workspace_bytes(const KernelArgs& a);

}  // namespace tr::cuda::attention

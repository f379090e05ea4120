// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers of the CUDA token kernels (token_kernels.cu), unpacking the
// resolved KernelArgs as the CPU twins in backends/cpu/kernels/tokens.cpp
// do, honouring the accumulate flags. Operands of mixed storage types throw
// std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/kernel_args.h"

namespace tr::cuda::tokens {

void pos_embed_fwd(const KernelArgs& a, cudaStream_t stream);    // in [x, e] out [y]
void pos_embed_bwd(const KernelArgs& a, cudaStream_t stream);    // in [dy] out [de, dx]
void class_token_fwd(const KernelArgs& a, cudaStream_t stream);  // in [x, token] out [y]
void class_token_bwd(const KernelArgs& a, cudaStream_t stream);  // in [dy] out [dtoken, dx]
void token_pool_fwd(const KernelArgs& a, cudaStream_t stream);   // in [x] out [y]
void token_pool_bwd(const KernelArgs& a, cudaStream_t stream);   // in [dy] out [dx]

}  // namespace tr::cuda::tokens

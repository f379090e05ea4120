// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA twins of backends/cpu/kernels/tokens.cpp: the position embedding,
// the class token and the first-token pool over NHWC token maps whose rows
// (tokens) are `stride` elements apart (FP32, FP16 or BF16, padding lanes
// written as zero); the parameters and their gradients are compact, in the
// features' storage type. A thread per element; the batch sums of the
// parameter gradients run in sample order, a thread per value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

struct TokenMap {
  int64_t n = 0, positions = 0, channels = 0;  // positions: H*W of x (the input side)
  int64_t stride = 0;
  Elem elem = Elem::F32;
};

cudaError_t launch_pos_embed_fwd(const TokenMap& m, const void* x, const void* e, void* y,
                                 cudaStream_t stream);
cudaError_t launch_pos_embed_bwd(const TokenMap& m, const void* dy, void* de, bool acc_de, void* dx,
                                 bool acc_dx, cudaStream_t stream);
cudaError_t launch_class_token_fwd(const TokenMap& m, const void* x, const void* token, void* y,
                                   cudaStream_t stream);
cudaError_t launch_class_token_bwd(const TokenMap& m, const void* dy, void* dtoken, bool acc_token,
                                   void* dx, bool acc_dx, cudaStream_t stream);
cudaError_t launch_token_pool_fwd(const TokenMap& m, const void* x, void* y, cudaStream_t stream);
cudaError_t launch_token_pool_bwd(const TokenMap& m, const void* dy, void* dx, bool acc_dx,
                                  cudaStream_t stream);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA layer normalisation over each row of C channels (NHWC positions,
// rows `stride` elements apart; FP32, FP16 or BF16 storage with FP32
// arithmetic), the twin of backends/cpu/kernels/layer_norm.cpp: a warp per
// row sums its statistics in double in a fixed lane order, and the
// parameter gradients add fixed chunks of rows whose partials are folded in
// chunk order, so every result is the same from run to run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

struct LayerNormRows {
  int64_t rows = 0, channels = 0;
  int64_t stride = 0;  // elements between rows (>= channels; padding lanes written as zero)
  Elem elem = Elem::F32;
  double eps = 1e-5;
};

// y = (x - mean) * inv_std * gamma + beta per row; saved (may be null): each
// row's mean and inv_std, interleaved.
cudaError_t launch_layer_norm_fwd(const LayerNormRows& r, const void* x, const float* gamma,
                                  const float* beta, void* y, float* saved, cudaStream_t stream);

struct LayerNormBwd {
  LayerNormRows rows;
  const void* x = nullptr;
  const float* gamma = nullptr;
  const float* saved = nullptr;
  const void* dy = nullptr;
  void* dx = nullptr;  // each null: not wanted
  float* dgamma = nullptr;
  float* dbeta = nullptr;
  bool accumulate_dx = false, accumulate_dgamma = false, accumulate_dbeta = false;
  void* workspace = nullptr;  // layer_norm_workspace_bytes, for the parameter gradients
};

// dx (+)= inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma;
// dgamma (+)= sum of dy * xhat and dbeta (+)= sum of dy over the rows.
cudaError_t launch_layer_norm_bwd(const LayerNormBwd& b, cudaStream_t stream);

// Stream workspace the backward's parameter gradients need.
uint64_t layer_norm_workspace_bytes(int64_t rows, int64_t channels);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA batch normalisation (FP32, NHWC: `rows` = N*H*W rows of `channels`)
// on raw device pointers, with the semantics of
// backends/cpu/kernels/batch_norm.cpp, alone or fused with the following
// ReLU, and the BN_EQ_PARAMS range op of backends/cpu/kernels/range_ops.cpp.
// Per-channel sums go through per-block partials in double, stored in the
// stream workspace, and a fixed-order combine: no atomics, so results do not
// depend on scheduling. Each launch returns the first launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/bn_eq_layer.h"

namespace tr::cuda {

struct BnTrain {
  const float* x = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  const float* prev_mean = nullptr;
  const float* prev_var = nullptr;
  float* y = nullptr;          // BN output, or relu(BN output) when `relu`
  float* saved = nullptr;      // [mean row, inv_std row], 2 * channels
  float* next_mean = nullptr;  // running estimates, momentum-updated
  float* next_var = nullptr;
  int64_t rows = 0, channels = 0;
  double eps = 1e-5, momentum = 0.1;
  bool relu = false;
  void* workspace = nullptr;  // bn_workspace_bytes(rows, channels)
};

// y = x * scale + bias per channel (then ReLU when `relu`).
struct BnInfer {
  const float* x = nullptr;
  const float* scale = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int64_t rows = 0, channels = 0;
  bool relu = false;
};

struct BnBackward {
  const float* x = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;  // only read when `relu` (the mask is recomputed)
  const float* saved = nullptr;
  const float* dy = nullptr;  // gradient of the (ReLU'd) output
  float* dgamma = nullptr;    // each output nullable: not wanted
  float* dbeta = nullptr;
  float* dx = nullptr;
  bool acc_dgamma = false, acc_dbeta = false, acc_dx = false;
  int64_t rows = 0, channels = 0;
  bool relu = false;
  void* workspace = nullptr;  // bn_workspace_bytes(rows, channels)
};

// One layer of BN_EQ_PARAMS: scale = gamma / sqrt(var + eps),
// bias = beta - mean * scale.
using tr::BnEqLayer;  // runtime/bn_eq_layer.h: plain pointers, shared with the CPU

uint64_t bn_workspace_bytes(int64_t rows, int64_t channels);
cudaError_t launch_bn_train(const BnTrain& b, cudaStream_t stream);
cudaError_t launch_bn_infer(const BnInfer& b, cudaStream_t stream);
cudaError_t launch_bn_backward(const BnBackward& b, cudaStream_t stream);
// Any number of layers; they travel by value in kernel parameters, so the
// launches need no host-to-device copy and can be captured.
cudaError_t launch_bn_eq_params(const BnEqLayer* layers, int count, cudaStream_t stream);

}  // namespace tr::cuda

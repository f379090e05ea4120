// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA batch normalisation (NHWC: `rows` = N*H*W rows of `channels`, row
// `stride` elements apart) on raw device pointers. Features and their
// gradients share one storage type, FP32, FP16 (AMP) or BF16; gamma, beta
// and their gradients, the running and saved statistics and the inference
// scale and bias are FP32 at every precision (dbeta sums N*H*W loss-scaled
// rows, which FP16 cannot hold). Arithmetic is FP32/double either way and
// 16-bit results are rounded once; padding lanes (channels to `stride`) of y
// and dx are written as zero. Semantics are those of
// backends/cpu/kernels/batch_norm.cpp, alone or fused with the following
// ReLU, and the BN_EQ_PARAMS range op of backends/cpu/kernels/range_ops.cpp.
// Per-channel sums go through per-block partials in double, stored in the
// stream workspace, and a fixed-order combine: no atomics, so results do not
// depend on scheduling. Each launch returns the first launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"
#include "runtime/bn_eq_layer.h"

namespace tr::cuda {

// SyncBatchNorm: sums `count` floats of device memory across every rank, in
// place, queued on `stream` (the backend's NCCL all-reduce). The training
// launches then take two sums for the statistics (the mean first, then the
// deviations about it, as the CPU twin) and one for the backward's dx; an
// empty one keeps each rank's statistics to itself.
struct BnRankSum {
  void (*sum)(const void* context, float* data, uint64_t count, cudaStream_t stream) = nullptr;
  const void* context = nullptr;
  explicit operator bool() const { return sum != nullptr; }
};

struct BnTrain {
  const void* x = nullptr;  // `elem`
  const float* gamma = nullptr;
  const float* beta = nullptr;
  const float* prev_mean = nullptr;
  const float* prev_var = nullptr;
  void* y = nullptr;           // BN output, or relu(BN output) when `relu`
  float* saved = nullptr;      // [mean row, inv_std row], 2 * channels
  float* next_mean = nullptr;  // running estimates, momentum-updated
  float* next_var = nullptr;
  int64_t rows = 0, channels = 0, stride = 0;
  Elem elem = Elem::F32;
  double eps = 1e-5, momentum = 0.1;
  bool relu = false;
  void* workspace = nullptr;  // bn_workspace_bytes(rows, channels)
  BnRankSum rank_sum;
};

// y = x * scale + bias per channel (then ReLU when `relu`).
struct BnInfer {
  const void* x = nullptr;  // `elem`
  const float* scale = nullptr;
  const float* bias = nullptr;
  void* y = nullptr;
  int64_t rows = 0, channels = 0, stride = 0;
  Elem elem = Elem::F32;
  bool relu = false;
};

struct BnBackward {
  const void* x = nullptr;  // `elem`, as are dy and dx
  const float* gamma = nullptr;
  const float* beta = nullptr;  // only read when `relu` (the mask is recomputed)
  const float* saved = nullptr;
  const void* dy = nullptr;  // gradient of the (ReLU'd) output
  float* dgamma = nullptr;   // each output nullable: not wanted
  float* dbeta = nullptr;
  void* dx = nullptr;
  bool acc_dgamma = false, acc_dbeta = false, acc_dx = false;
  int64_t rows = 0, channels = 0, stride = 0;
  Elem elem = Elem::F32;
  bool relu = false;
  void* workspace = nullptr;  // bn_workspace_bytes(rows, channels)
  // dgamma and dbeta stay this rank's (the gradient all-reduce averages
  // them); dx sums its two per-channel terms and the row count across ranks.
  BnRankSum rank_sum;
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

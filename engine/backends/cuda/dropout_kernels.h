// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA dropout (FP32 or FP16 features, INT8 mask with padded channels) on
// raw device pointers; FP16 values are computed in FP32 and rounded once. The masks are bit for bit
// those of backends/cpu/kernels/dropout.cpp: the same counter-based SplitMix64 draw per element,
// keyed by seed, step, layer and the element's index across ranks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

// How features and mask are walked: `rows` rows of `len` values, each
// row's mask `mask_stride` bytes and its features `feature_stride` elements
// apart (FP16 features pad their channels as the mask does; FP32 ones are
// compact). One flat row when the mask's channels are not padded.
struct DropoutRows {
  int64_t rows = 1, len = 0, mask_stride = 0, feature_stride = 0;
};

struct DropoutDraw {
  uint64_t seed = 0;
  int layer = -1;
  uint64_t threshold = 0;  // drop when the draw's top 32 bits fall below it
  uint64_t first = 0;      // index of this rank's first element
  float scale = 1.0f;      // 1 / (1 - p), 0 when p >= 1
};

// mask = keep ? 1 : 0 and y = x * (mask * scale); `step` (nullable: 0) is
// read on the device, rounded as on the CPU.
// The features' padding lanes are written as zero.
cudaError_t launch_dropout_fwd(Elem e, const void* x, void* y, int8_t* mask, DropoutRows rows,
                               DropoutDraw draw, const float* step, cudaStream_t stream);
// dx (+)= dy * (mask * scale)
cudaError_t launch_dropout_bwd(Elem e, const int8_t* mask, const void* dy, void* dx,
                               DropoutRows rows, float scale, bool accumulate, cudaStream_t stream);

}  // namespace tr::cuda

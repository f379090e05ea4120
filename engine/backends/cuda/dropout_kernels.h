// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA dropout (FP32 features, INT8 mask with padded channels) on raw device
// pointers. The masks are bit for bit those of backends/cpu/kernels/dropout.cpp:
// the same counter-based SplitMix64 draw per element, keyed by seed, step,
// layer and the element's index across ranks.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tr::cuda {

// How features and mask are walked: `rows` rows of `len` compact floats,
// each row's mask `mask_stride` bytes apart (one flat row when the mask's
// channels are not padded).
struct DropoutRows {
  int64_t rows = 1, len = 0, mask_stride = 0;
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
cudaError_t launch_dropout_fwd(const float* x, float* y, int8_t* mask, DropoutRows rows,
                               DropoutDraw draw, const float* step, cudaStream_t stream);
// dx (+)= dy * (mask * scale)
cudaError_t launch_dropout_bwd(const int8_t* mask, const float* dy, float* dx, DropoutRows rows,
                               float scale, bool accumulate, cudaStream_t stream);

}  // namespace tr::cuda

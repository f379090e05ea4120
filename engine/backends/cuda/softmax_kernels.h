// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA softmax cross-entropy (FP32 or FP16 logits and gradient, computed in
// FP32; INT32 labels) on raw device pointers, with the semantics of
// backends/cpu/kernels/softmax_ce.cpp: the result block gets the summed loss, top-1 and top-5 hits
// and the row count; the logits' gradient or the confusion counts go to the second output. Rows are
// tallied into a workspace and summed in a fixed order, so the loss does not depend on scheduling.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

struct SoftmaxCe {
  const void* logits = nullptr;  // n rows of k, `stride` elements apart
  const int32_t* labels = nullptr;
  int64_t n = 0, k = 0;
  int64_t stride = 0;          // of logits and grad (>= k; grad's padding lanes written as zero)
  Elem elem = Elem::F32;       // storage of logits and grad
  float* result = nullptr;     // loss, top-1, top-5, n
  void* grad = nullptr;        // like the logits, or null
  float* confusion = nullptr;  // k x k (label, prediction), or null
  bool accumulate = false;     // into grad or confusion
  float inv_n = 1.0f;          // 1 / n
  // Under AMP the gradient is of the scaled loss: inv_n * *loss_scale (nullable).
  const float* loss_scale = nullptr;
  void* workspace = nullptr;  // softmax_ce_workspace_bytes(n)
};

uint64_t softmax_ce_workspace_bytes(int64_t n);
cudaError_t launch_softmax_ce(const SoftmaxCe& s, cudaStream_t stream);

}  // namespace tr::cuda

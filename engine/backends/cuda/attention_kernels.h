// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA scaled dot-product attention over the tokens of an NHWC feature map,
// the twin of backends/cpu/kernels/attention.cpp: a thread per (sample,
// head, token) with an online softmax (no T x T scores anywhere), and a
// backward that recomputes each probability from the saved log-sum-exp in
// two passes that each write their own rows (no atomics). FP32, FP16 or BF16
// features (rows `stride` elements apart) with FP32 arithmetic; lse FP32.
// Dropout on the probabilities draws the CPU's mask (core/attention_dropout.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"
#include "core/attention_dropout.h"

namespace tr::cuda {

inline constexpr int64_t kAttentionMaxHeadDim = 512;

struct AttentionShape {
  int64_t n = 0, tokens = 0, channels = 0, heads = 1;  // channels: C (qkv holds 3C)
  int64_t qkv_stride = 0, o_stride = 0;                // elements between tokens' rows
  Elem elem = Elem::F32;
};

// A launch's dropout on the probabilities (off: none), and where its
// samples start in the global batch and its step is.
struct AttentionDropout {
  AttentionDropoutArgs draw;
  int64_t first_sample = 0;
  const float* step = nullptr;  // S_SCALARS' STEP, read on the device (null: 0)
};

// o = softmax(q k^T / sqrt(d)) v per head, the probabilities dropped as
// `drop` says; lse (may be null) the scores' log-sum-exp.
cudaError_t launch_attention_fwd(const AttentionShape& s, const void* qkv, void* o, float* lse,
                                 const AttentionDropout& drop, cudaStream_t stream);

// dqkv (+)= the gradients of qkv; `workspace`: attention_workspace_bytes.
cudaError_t launch_attention_bwd(const AttentionShape& s, const void* qkv, const void* o,
                                 const float* lse, const void* dout, void* dqkv, bool accumulate,
                                 const AttentionDropout& drop, void* workspace,
                                 cudaStream_t stream);

uint64_t attention_workspace_bytes(const AttentionShape& s);

}  // namespace tr::cuda

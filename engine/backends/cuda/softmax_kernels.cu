// SPDX-License-Identifier: GPL-3.0-or-later
// Softmax cross-entropy: a warp per row writes its loss and hits to the
// workspace (and its gradient row, and its confusion count); one block then
// sums the rows in a fixed tree, which makes the loss deterministic.
#include <cmath>

#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/softmax_kernels.h"

namespace tr::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = kThreads / kWarp;

struct RowTally {
  double loss;
  int32_t top1, top5;
};

__device__ inline double warp_sum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline int64_t warp_count(int64_t v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The CPU's running maximum starting at row[0]: NaN elsewhere is skipped (and
// a NaN row[0] sticks); the loss is NaN either way, so only the bits of
// finite rows matter, and the maximum of those does not depend on order.
__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = u > v ? u : v;
  }
  return v;
}

// The CPU's prediction: the label unless some logit beats it strictly, then
// the first index of the largest logit. (value, index) pairs, reduced so the
// larger value wins and the lower index wins a tie; NaN never wins.
__device__ inline void warp_first_max(float& v, int64_t& idx) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    const int64_t j = __shfl_xor_sync(0xffffffffu, idx, o);
    if (u > v || (u == v && j < idx)) {
      v = u;
      idx = j;
    }
  }
}

template <class T>
__global__ void rows_kernel(SoftmaxCe s) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (i >= s.n) return;  // whole warps leave together: the shuffles stay full
  RowTally* tally = static_cast<RowTally*>(s.workspace);
  const T* row = static_cast<const T*>(s.logits) + i * s.stride;
  T* g = s.grad ? static_cast<T*>(s.grad) + i * s.stride : nullptr;
  if (g)
    for (int64_t k = s.k + lane; k < s.stride; k += kWarp) store(g, k, 0.0f);
  const int32_t label = s.labels[i];
  if (label < 0 || label >= s.k) {
    // A broken label stops the step through a NaN loss; its gradient row stays zero.
    if (lane == 0) tally[i] = {nan(""), 0, 0};
    if (g && !s.accumulate)
      for (int64_t k = lane; k < s.k; k += kWarp) store(g, k, 0.0f);
    return;
  }
  float mx = load(row, 0);
  for (int64_t k = lane; k < s.k; k += kWarp) {
    const float v = load(row, k);
    mx = v > mx ? v : mx;
  }
  mx = warp_max(mx);
  const float target = load(row, label);
  double sum = 0.0;
  int64_t greater = 0;
  float best = -INFINITY;
  int64_t best_idx = s.k;
  for (int64_t k = lane; k < s.k; k += kWarp) {
    const float v = load(row, k);
    sum += exp(static_cast<double>(v - mx));
    greater += v > target ? 1 : 0;
    if (v > best) {  // lanes walk k upwards: the first maximum stays
      best = v;
      best_idx = k;
    }
  }
  sum = warp_sum(sum);
  greater = warp_count(greater);
  if (lane == 0) {
    // Ties favour the label: it is within top-k unless k logits beat it strictly.
    tally[i] = {static_cast<double>(mx) + log(sum) - static_cast<double>(target),
                greater < 1 ? 1 : 0, greater < 5 ? 1 : 0};
  }
  if (g) {
    float scale = s.inv_n;
    if (s.loss_scale) scale *= *s.loss_scale;
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t k = lane; k < s.k; k += kWarp) {
      // Rounded steps, as the CPU does them, so no fused multiply-add drifts.
      const float p = __fmul_rn(expf(load(row, k) - mx), inv_sum);
      const float d = __fmul_rn(p - (k == label ? 1.0f : 0.0f), scale);
      store(g, k, s.accumulate ? load(g, k) + d : d);
    }
  }
  if (s.confusion) {
    warp_first_max(best, best_idx);
    const int64_t predicted = best > target ? best_idx : label;
    // Whole counts below 2^24 add exactly in any order.
    if (lane == 0) atomicAdd(s.confusion + label * s.k + predicted, 1.0f);
  }
}

__global__ void total_kernel(SoftmaxCe s) {
  __shared__ double loss[kThreads];
  __shared__ int64_t top1[kThreads], top5[kThreads];
  const RowTally* tally = static_cast<const RowTally*>(s.workspace);
  const int t = static_cast<int>(threadIdx.x);
  double l = 0.0;
  int64_t a = 0, b = 0;
  for (int64_t i = t; i < s.n; i += kThreads) {
    l += tally[i].loss;
    a += tally[i].top1;
    b += tally[i].top5;
  }
  loss[t] = l;
  top1[t] = a;
  top5[t] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      loss[t] += loss[t + half];
      top1[t] += top1[t + half];
      top5[t] += top5[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    s.result[0] = static_cast<float>(loss[0]);
    s.result[1] = static_cast<float>(top1[0]);
    s.result[2] = static_cast<float>(top5[0]);
    s.result[3] = static_cast<float>(s.n);
  }
}

}  // namespace

uint64_t softmax_ce_workspace_bytes(int64_t n) {
  return static_cast<uint64_t>(n > 0 ? n : 0) * sizeof(RowTally);
}

cudaError_t launch_softmax_ce(const SoftmaxCe& s, cudaStream_t stream) {
  if (s.confusion && !s.accumulate) {
    const cudaError_t err =
        cudaMemsetAsync(s.confusion, 0, static_cast<size_t>(s.k * s.k) * sizeof(float), stream);
    if (err != cudaSuccess) return err;
  }
  if (s.n > 0) {
    const unsigned blocks = static_cast<unsigned>((s.n + kRowsPerBlock - 1) / kRowsPerBlock);
    dispatch(s.elem, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      rows_kernel<T><<<blocks, kThreads, 0, stream>>>(s);
    });
  }
  total_kernel<<<1, kThreads, 0, stream>>>(s);
  return cudaGetLastError();
}

}  // namespace tr::cuda

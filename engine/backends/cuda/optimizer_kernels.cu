// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA optimizer kernels, element for element the arithmetic of the CPU
// kernels (torch.optim.SGD/Adam with L2 weight decay, LARS as apex LARC), and
// the single-thread scalar kernels.
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/optimizer_kernels.h"

namespace tr::cuda {

namespace {

__global__ void sgd_kernel(float* w, const float* g, float* m, uint64_t n, SgdConstants c,
                           const float* scalars, ScalarSlots slots) {
  if (scalars[slots.overflow] != 0.0f) return;
  const float lr = scalars[slots.lr];
  const uint64_t stride = grid_stride();
  if (!m) {
    for (uint64_t i = first_index(); i < n; i += stride)
      w[i] -= lr * (g[i] + c.weight_decay * w[i]);
    return;
  }
  // torch: the buffer starts as the first gradient (no dampening).
  const float keep = scalars[slots.updates] <= 1.0f ? 0.0f : c.momentum;
  for (uint64_t i = first_index(); i < n; i += stride) {
    const float d = g[i] + c.weight_decay * w[i];
    const float mi = keep * m[i] + d;
    m[i] = mi;
    w[i] -= c.nesterov ? lr * (d + c.momentum * mi) : lr * mi;
  }
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, uint64_t n,
                            AdamConstants c, const float* scalars, ScalarSlots slots) {
  if (scalars[slots.overflow] != 0.0f) return;
  // torch: step_size = lr / corr1, denom = sqrt(v) / sqrt(corr2) + eps.
  const float step_size = scalars[slots.lr] / scalars[slots.adam_corr1];
  const float inv_sqrt_corr2 = 1.0f / sqrtf(scalars[slots.adam_corr2]);
  const uint64_t stride = grid_stride();
  for (uint64_t i = first_index(); i < n; i += stride) {
    const float gi = g[i] + c.weight_decay * w[i];
    const float mi = c.beta1 * m[i] + c.one_minus_beta1 * gi;
    const float vi = c.beta2 * v[i] + c.one_minus_beta2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= step_size * mi / (sqrtf(vi) * inv_sqrt_corr2 + c.eps);
  }
}

static_assert(sizeof(LarsBatch) + 256 <= 4096, "LarsBatch must fit the 4 KiB of kernel parameters");

// The tensor whose run of blocks holds `block` (runs ascend; at most 64 to scan).
__device__ int lars_tensor_of(const LarsBatch& b, uint32_t block) {
  int t = 0;
  while (t + 1 < b.count && b.t[t + 1].first_block <= block) ++t;
  return t;
}

// Sums (x, y) over the block in a fixed tree order, so the result depends on
// the data alone. Valid in thread 0; blockDim.x must be kThreads.
__device__ void block_sum2(double& x, double& y) {
  __shared__ double sx[kThreads], sy[kThreads];
  const unsigned tid = threadIdx.x;
  sx[tid] = x;
  sy[tid] = y;
  __syncthreads();
  for (unsigned half = kThreads / 2; half > 0; half /= 2) {
    if (tid < half) {
      sx[tid] += sx[tid + half];
      sy[tid] += sy[tid + half];
    }
    __syncthreads();
  }
  x = sx[0];
  y = sy[0];
}

__global__ void lars_partials_kernel(const LarsBatch b, double* partials) {
  const LarsTensor& t = b.t[lars_tensor_of(b, blockIdx.x)];
  const uint64_t lo = (blockIdx.x - t.first_block) * kLarsChunk;
  const uint64_t hi = lo + kLarsChunk < t.n ? lo + kLarsChunk : t.n;
  double sw = 0.0, sg = 0.0;
  for (uint64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
    const double w = t.w[i], g = t.g[i];
    sw += w * w;
    sg += g * g;
  }
  block_sum2(sw, sg);
  if (threadIdx.x == 0) {
    partials[2 * blockIdx.x] = sw;
    partials[2 * blockIdx.x + 1] = sg;
  }
}

// One block per tensor: its partials, in block order per thread, then the tree.
__global__ void lars_combine_kernel(const LarsBatch b, const double* partials, bool squares) {
  const LarsTensor& t = b.t[blockIdx.x];
  const uint64_t runs = (t.n + kLarsChunk - 1) / kLarsChunk;  // as lars_blocks()
  const uint32_t end = t.first_block + static_cast<uint32_t>(runs == 0 ? 1 : runs);
  double sw = 0.0, sg = 0.0;
  for (uint32_t j = t.first_block + threadIdx.x; j < end; j += kThreads) {
    sw += partials[2 * j];
    sg += partials[2 * j + 1];
  }
  block_sum2(sw, sg);
  if (threadIdx.x == 0 && squares) {
    t.norms[0] += static_cast<float>(sw);
    t.norms[1] += static_cast<float>(sg);
  } else if (threadIdx.x == 0) {
    t.norms[0] = static_cast<float>(sqrt(sw));
    t.norms[1] = static_cast<float>(sqrt(sg));
  }
}

__global__ void lars_update_kernel(const LarsBatch b, LarsConstants c, const float* scalars,
                                   ScalarSlots slots) {
  if (scalars[slots.overflow] != 0.0f) return;
  const LarsTensor& t = b.t[lars_tensor_of(b, blockIdx.x)];
  float rate = 1.0f;
  if (t.norms) {
    const double wn = t.norms[0], gn = t.norms[1];
    // Explicit roundings: a contracted fma would differ from the CPU's ratio.
    if (wn > 0.0 && gn > 0.0)
      rate = static_cast<float>(__ddiv_rn(__dmul_rn(c.trust_coefficient, wn),
                                          __dadd_rn(gn, __dmul_rn(c.weight_decay_d, wn))));
  }
  const float lr = scalars[slots.lr];
  // torch: the buffer starts as the first (scaled, decayed) gradient.
  const float keep = scalars[slots.updates] <= 1.0f ? 0.0f : c.momentum;
  const uint64_t lo = (blockIdx.x - t.first_block) * kLarsChunk;
  const uint64_t hi = lo + kLarsChunk < t.n ? lo + kLarsChunk : t.n;
  for (uint64_t i = lo + threadIdx.x; i < hi; i += kThreads) {
    const float mi = keep * t.m[i] + rate * (t.g[i] + c.weight_decay * t.w[i]);
    t.m[i] = mi;
    t.w[i] -= lr * mi;
  }
}

__global__ void loss_scale_update_kernel(float* s, ScalarSlots slots, int growth_interval) {
  float& scale = s[slots.loss_scale];
  float& clean = s[slots.clean_steps];
  if (s[slots.overflow] != 0.0f) {
    scale = fmaxf(1.0f, scale * 0.5f);
    clean = 0.0f;
  } else {
    clean += 1.0f;
    if (clean >= static_cast<float>(growth_interval)) {
      scale *= 2.0f;
      clean = 0.0f;
    }
  }
  s[slots.inv_loss_scale] = 1.0f / scale;
}

__global__ void adam_bias_correction_kernel(float* s, ScalarSlots slots, double beta1,
                                            double beta2) {
  // An overflowed step has not counted (and its update is skipped anyway).
  const double t = fmax(1.0, static_cast<double>(s[slots.updates]));
  s[slots.adam_corr1] = static_cast<float>(1.0 - pow(beta1, t));
  s[slots.adam_corr2] = static_cast<float>(1.0 - pow(beta2, t));
}

__global__ void count_update_kernel(float* s, ScalarSlots slots) {
  if (s[slots.overflow] == 0.0f) s[slots.updates] += 1.0f;
}

}  // namespace

cudaError_t launch_sgd(float* w, const float* g, float* m, uint64_t n, SgdConstants c,
                       const float* scalars, ScalarSlots slots, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, g, m, n, c, scalars, slots);
  return cudaGetLastError();
}

cudaError_t launch_adam(float* w, const float* g, float* m, float* v, uint64_t n, AdamConstants c,
                        const float* scalars, ScalarSlots slots, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, g, m, v, n, c, scalars, slots);
  return cudaGetLastError();
}

cudaError_t launch_lars_norms(const LarsBatch& batch, double* partials, bool squares,
                              cudaStream_t stream) {
  if (batch.count == 0) return cudaGetLastError();
  lars_partials_kernel<<<batch.blocks, kThreads, 0, stream>>>(batch, partials);
  lars_combine_kernel<<<batch.count, kThreads, 0, stream>>>(batch, partials, squares);
  return cudaGetLastError();
}

cudaError_t launch_lars_update(const LarsBatch& batch, LarsConstants c, const float* scalars,
                               ScalarSlots slots, cudaStream_t stream) {
  if (batch.count == 0) return cudaGetLastError();
  lars_update_kernel<<<batch.blocks, kThreads, 0, stream>>>(batch, c, scalars, slots);
  return cudaGetLastError();
}

cudaError_t launch_loss_scale_update(float* scalars, ScalarSlots slots, int growth_interval,
                                     cudaStream_t stream) {
  loss_scale_update_kernel<<<1, 1, 0, stream>>>(scalars, slots, growth_interval);
  return cudaGetLastError();
}

cudaError_t launch_adam_bias_correction(float* scalars, ScalarSlots slots, double beta1,
                                        double beta2, cudaStream_t stream) {
  adam_bias_correction_kernel<<<1, 1, 0, stream>>>(scalars, slots, beta1, beta2);
  return cudaGetLastError();
}

cudaError_t launch_count_update(float* scalars, ScalarSlots slots, cudaStream_t stream) {
  count_update_kernel<<<1, 1, 0, stream>>>(scalars, slots);
  return cudaGetLastError();
}

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA optimizer kernels, element for element the arithmetic of the CPU
// kernels (torch.optim.SGD/Adam with L2 weight decay), and the single-thread
// scalar kernels.
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

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA optimizer kernels (SGD, Adam) and the scalar ops that keep S_SCALARS
// (loss scale, Adam bias correction, update count), on raw device pointers.
// The scalars live in the arena and are read and written on the device, so a
// captured step needs no host round trip. Semantics are those of
// backends/cpu/kernels/optimizers.h, including the skip of an overflowed step.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tr::cuda {

// Positions of the scalars these kernels use inside S_SCALARS (ScalarSlot).
struct ScalarSlots {
  int lr = 0, overflow = 0, loss_scale = 0, inv_loss_scale = 0, clean_steps = 0;
  int adam_corr1 = 0, adam_corr2 = 0, updates = 0;
};

struct SgdConstants {
  float momentum = 0, weight_decay = 0;
  bool nesterov = false;
};

struct AdamConstants {
  float beta1 = 0, beta2 = 0, one_minus_beta1 = 0, one_minus_beta2 = 0;
  float weight_decay = 0, eps = 0;
};

// m may be null (no momentum buffer).
cudaError_t launch_sgd(float* w, const float* g, float* m, uint64_t n, SgdConstants c,
                       const float* scalars, ScalarSlots slots, cudaStream_t stream);
cudaError_t launch_adam(float* w, const float* g, float* m, float* v, uint64_t n, AdamConstants c,
                        const float* scalars, ScalarSlots slots, cudaStream_t stream);
cudaError_t launch_loss_scale_update(float* scalars, ScalarSlots slots, int growth_interval,
                                     cudaStream_t stream);
cudaError_t launch_adam_bias_correction(float* scalars, ScalarSlots slots, double beta1,
                                        double beta2, cudaStream_t stream);
cudaError_t launch_count_update(float* scalars, ScalarSlots slots, cudaStream_t stream);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA optimizer kernels (SGD, Adam, LARS) and the scalar ops that keep S_SCALARS
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
// LARS works per tensor. The tensors of a span reach the kernels as a batch
// of descriptors passed by value (kernel parameters, at most 4 KiB): that is
// captured with the launch, needs no host-to-device copy (which a graph
// capture could not take from pageable memory) and covers a whole region
// kind of a real model in one batch; longer spans take several batches.
// Each tensor owns a fixed run of blocks, each block kLarsChunk elements.
inline constexpr int kLarsBatch = 64;
inline constexpr uint64_t kLarsChunk = 4096;

struct LarsTensor {
  float* w = nullptr;
  const float* g = nullptr;
  float* m = nullptr;      // LARS_UPDATE only
  float* norms = nullptr;  // [||w||, ||g||]; for LARS_UPDATE null means ratio 1 (biases)
  uint64_t n = 0;
  uint32_t first_block = 0;  // within the batch
};

struct LarsBatch {
  LarsTensor t[kLarsBatch];
  int count = 0;
  uint32_t blocks = 0;  // sum of the tensors' blocks
};

struct LarsConstants {
  float momentum = 0, weight_decay = 0;
  double trust_coefficient = 0, weight_decay_d = 0;  // the ratio is formed in double, as on the CPU
};

// Blocks a tensor of n elements takes (at least one, so an empty one still gets norms 0).
inline uint32_t lars_blocks(uint64_t n) {
  const uint64_t b = (n + kLarsChunk - 1) / kLarsChunk;
  return static_cast<uint32_t>(b == 0 ? 1 : b);
}
// Workspace for launch_lars_norms: two double partials per block.
inline uint64_t lars_norms_workspace_bytes(uint32_t blocks) {
  return uint64_t{16} * blocks;
}

// Writes sqrt(sum w^2), sqrt(sum g^2) of each tensor to its norms, summed in
// double in an order fixed by the batch alone (no atomics): one launch
// leaves per-block partials in `partials`, a second sums each tensor's.
// With `squares` (ZeRO-2's share of a layer) it adds the sums themselves.
cudaError_t launch_lars_norms(const LarsBatch& batch, double* partials, bool squares,
                              cudaStream_t stream);
// Momentum SGD with the trust ratio read from each tensor's norms on the device.
cudaError_t launch_lars_update(const LarsBatch& batch, LarsConstants c, const float* scalars,
                               ScalarSlots slots, cudaStream_t stream);
cudaError_t launch_loss_scale_update(float* scalars, ScalarSlots slots, int growth_interval,
                                     cudaStream_t stream);
cudaError_t launch_adam_bias_correction(float* scalars, ScalarSlots slots, double beta1,
                                        double beta2, cudaStream_t stream);
cudaError_t launch_count_update(float* scalars, ScalarSlots slots, cudaStream_t stream);

}  // namespace tr::cuda

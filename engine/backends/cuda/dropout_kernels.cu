// SPDX-License-Identifier: GPL-3.0-or-later
// Dropout kernels: one thread per feature element; the mask is a function of
// the element's index alone, so any thread layout draws the CPU's mask.
#include "backends/cuda/dropout_kernels.h"
#include "backends/cuda/launch_config.cuh"

namespace tr::cuda {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// SplitMix64's finaliser; the constants must stay those of the CPU twin.
__device__ inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ inline uint64_t stream_key(uint64_t seed, uint64_t step, int layer) {
  uint64_t k = mix(seed + kGolden);
  k = mix(k ^ (step * 0xD1B54A32D192ED03ull));
  return mix(k ^ (static_cast<uint64_t>(static_cast<uint32_t>(layer)) * 0xAEF17502108EF2D9ull));
}

// The CPU's llround of a positive step: half away from zero, as llroundf.
__device__ inline uint64_t step_of(const float* step) {
  const float s = step ? *step : 0.0f;
  return s > 0.0f ? static_cast<uint64_t>(llroundf(s)) : 0;
}

__global__ void dropout_fwd_kernel(const float* x, float* y, int8_t* mask, DropoutRows rows,
                                   DropoutDraw draw, const float* step) {
  // Every thread derives the key itself: three mixes cost less than a
  // second launch or a shared-memory handoff.
  const uint64_t key = stream_key(draw.seed, step_of(step), draw.layer);
  const uint64_t n = static_cast<uint64_t>(rows.rows * rows.len);
  const uint64_t len = static_cast<uint64_t>(rows.len);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const uint64_t r = i / len, c = i - r * len;
    const bool keep = (mix(key + (draw.first + i + 1) * kGolden) >> 32) >= draw.threshold;
    const int8_t m = keep ? 1 : 0;
    mask[r * rows.mask_stride + c] = m;
    // x * (m * scale) as the CPU computes it: a dropped inf still gives NaN.
    y[i] = x[i] * (static_cast<float>(m) * draw.scale);
  }
}

__global__ void dropout_bwd_kernel(const int8_t* mask, const float* dy, float* dx, DropoutRows rows,
                                   float scale, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(rows.rows * rows.len);
  const uint64_t len = static_cast<uint64_t>(rows.len);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const uint64_t r = i / len, c = i - r * len;
    const float d = dy[i] * (static_cast<float>(mask[r * rows.mask_stride + c]) * scale);
    dx[i] = accumulate ? dx[i] + d : d;
  }
}

}  // namespace

cudaError_t launch_dropout_fwd(const float* x, float* y, int8_t* mask, DropoutRows rows,
                               DropoutDraw draw, const float* step, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(rows.rows * rows.len);
  if (n) dropout_fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, y, mask, rows, draw, step);
  return cudaGetLastError();
}

cudaError_t launch_dropout_bwd(const int8_t* mask, const float* dy, float* dx, DropoutRows rows,
                               float scale, bool accumulate, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(rows.rows * rows.len);
  if (n)
    dropout_bwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(mask, dy, dx, rows, scale,
                                                               accumulate);
  return cudaGetLastError();
}

}  // namespace tr::cuda

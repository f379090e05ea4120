// SPDX-License-Identifier: GPL-3.0-or-later
// Launch geometry shared by the elementwise CUDA kernels: 256 threads a
// block and grid-stride loops, so one grid size serves any span length.
#pragma once

#include <cstdint>

namespace tr::cuda {

inline constexpr int kThreads = 256;
// Enough blocks to fill an H100 several times over; longer spans loop.
inline constexpr uint64_t kMaxBlocks = 4096;

inline unsigned blocks_for(uint64_t items) {
  const uint64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b == 0 ? 1 : (b < kMaxBlocks ? b : kMaxBlocks));
}

__device__ inline uint64_t first_index() {
  return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline uint64_t grid_stride() {
  return static_cast<uint64_t>(gridDim.x) * blockDim.x;
}

// float4 loads need 16-byte addresses; spans start on 256-byte region
// boundaries in practice, but a span may begin inside one.
inline bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace tr::cuda

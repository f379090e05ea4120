// SPDX-License-Identifier: GPL-3.0-or-later
// Bias broadcast and column sums for the linear layer (see linear_kernels.h).
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/linear_kernels.h"

namespace tr::cuda {

namespace {

// A block is 32 columns by kLanes row lanes: a warp reads 32 neighbouring
// floats of one row (coalesced), and each lane walks every kLanes-th row.
constexpr int kColumns = 32;
constexpr int kLanes = kThreads / kColumns;

__global__ void bias_rows_kernel(float* y, const float* b, uint64_t rows, uint64_t cols) {
  const uint64_t n = rows * cols;
  for (uint64_t i = first_index(); i < n; i += grid_stride()) y[i] = b[i % cols];
}

__global__ void column_sums_kernel(const float* m, int64_t rows, int64_t cols, float* out) {
  __shared__ double partial[kLanes][kColumns];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  double sum = 0.0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kLanes) sum += m[r * cols + c];
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  // The lanes in a fixed order: the result does not depend on scheduling.
  double total = 0.0;
  for (int l = 0; l < kLanes; ++l) total += partial[l][threadIdx.x];
  out[c] = static_cast<float>(total);
}

}  // namespace

cudaError_t launch_bias_rows(float* y, const float* b, int64_t rows, int64_t cols,
                             cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const uint64_t n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols);
  bias_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, b, static_cast<uint64_t>(rows),
                                                           static_cast<uint64_t>(cols));
  return cudaGetLastError();
}

cudaError_t launch_column_sums(const float* m, int64_t rows, int64_t cols, float* out,
                               cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  // One column tile a block; a linear layer has at most a few thousand
  // rows (the batch), so one block's lanes walking them is plenty.
  const auto blocks = static_cast<unsigned>((cols + kColumns - 1) / kColumns);
  column_sums_kernel<<<blocks, dim3(kColumns, kLanes), 0, stream>>>(m, rows, cols, out);
  return cudaGetLastError();
}

}  // namespace tr::cuda

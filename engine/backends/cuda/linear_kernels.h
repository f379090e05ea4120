// SPDX-License-Identifier: GPL-3.0-or-later
// The small kernels around the linear layer's cuBLAS GEMMs, on raw device
// pointers of row-major matrices in FP32 or FP16 storage (rows `stride`
// elements apart; FP16 features pad their columns), computed in float: the
// bias broadcast that seeds the forward output, the bias gradient's column
// sums, and the add of an FP32 GEMM result into a padded FP16 gradient.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

// y[r, c] = b[c] for c < cols (0 when `b` is null) and 0 in the padding
// lanes up to `stride`: the GEMM then adds x w^T with beta = 1.
cudaError_t launch_bias_rows(Elem e, void* y, int64_t stride, const void* b, int64_t rows,
                             int64_t cols, cudaStream_t stream);

// out[c] = sum over r of m[r * stride + c], summed in double in a fixed order
// (the same bits at every run, no atomics) and rounded once to float (then
// to half for FP16 storage, as the CPU twin's staging rounds). `m` and `out`
// share the storage type `e`.
cudaError_t launch_column_sums(Elem e, const void* m, int64_t stride, int64_t rows, int64_t cols,
                               void* out, cudaStream_t stream);
// The same sums for many rows (a convolution's bias gradient: a row per
// output pixel): the rows split into slices summed side by side into double
// partials in `partials` (column_sum_workspace_bytes), then the slices summed
// in order, so the result is the same at every run. The slicing depends on
// the row count alone.
uint64_t column_sum_workspace_bytes(int64_t rows, int64_t cols);
cudaError_t launch_column_sums_sliced(Elem e, const void* m, int64_t stride, int64_t rows,
                                      int64_t cols, void* out, void* partials, cudaStream_t stream);
// Compact FP32.
inline cudaError_t launch_column_sums(const float* m, int64_t rows, int64_t cols, float* out,
                                      cudaStream_t stream) {
  return launch_column_sums(Elem::F32, m, cols, rows, cols, out, stream);
}

// dst (+)= src for `n` logical values: `src` compact FP32, `dst` a view in
// storage `e`, rounded once (padding lanes written as zero).
cudaError_t launch_store_rows(const float* src, uint64_t n, Elem e, FeatureView dst,
                              bool accumulate, cudaStream_t stream);

}  // namespace tr::cuda

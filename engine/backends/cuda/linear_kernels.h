// SPDX-License-Identifier: GPL-3.0-or-later
// The small kernels around the linear layer's cuBLAS GEMMs, on raw device
// pointers of row-major [rows, cols] FP32 matrices: the bias broadcast that
// seeds the forward output, and the bias gradient's column sums.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tr::cuda {

// y[r, c] = b[c] for every row: the GEMM then adds x w^T with beta = 1.
cudaError_t launch_bias_rows(float* y, const float* b, int64_t rows, int64_t cols,
                             cudaStream_t stream);

// out[c] = sum over r of m[r, c], summed in double in a fixed order (the
// same bits at every run, no atomics) and rounded once, as the CPU twin does.
cudaError_t launch_column_sums(const float* m, int64_t rows, int64_t cols, float* out,
                               cudaStream_t stream);

}  // namespace tr::cuda

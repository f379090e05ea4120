// SPDX-License-Identifier: GPL-3.0-or-later
// Bias broadcast, column sums and FP32-to-view stores for the linear layer
// (see linear_kernels.h), templated on the storage type.
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/linear_kernels.h"

namespace tr::cuda {

namespace {

// A block is 32 columns by kLanes row lanes: a warp reads 32 neighbouring
// values of one row (coalesced), and each lane walks every kLanes-th row.
constexpr int kColumns = 32;
constexpr int kLanes = kThreads / kColumns;

template <class T>
__global__ void bias_rows_kernel(T* y, uint64_t stride, const T* b, uint64_t rows, uint64_t cols) {
  const uint64_t n = rows * stride;
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const uint64_t c = i % stride;
    store(y, i, b && c < cols ? load(b, c) : 0.0f);
  }
}

template <class T>
__global__ void column_sums_kernel(const T* m, int64_t stride, int64_t rows, int64_t cols, T* out) {
  __shared__ double partial[kLanes][kColumns];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  double sum = 0.0;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kLanes) sum += load(m, r * stride + c);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  // The lanes in a fixed order: the result does not depend on scheduling.
  double total = 0.0;
  for (int l = 0; l < kLanes; ++l) total += partial[l][threadIdx.x];
  store(out, c, static_cast<float>(total));
}

// Rows per slice of the sliced column sums, and at most this many slices.
constexpr int64_t kSliceRows = 1024;
constexpr int64_t kMaxSlices = 256;

int64_t slices_for(int64_t rows) {
  const int64_t s = (rows + kSliceRows - 1) / kSliceRows;
  return s < 1 ? 1 : (s > kMaxSlices ? kMaxSlices : s);
}

// Block (x: column tile, y: slice): the slice's rows, lanes in a fixed order.
template <class T>
__global__ void column_slice_sums_kernel(const T* m, int64_t stride, int64_t rows, int64_t cols,
                                         int64_t per_slice, double* partials) {
  __shared__ double partial[kLanes][kColumns];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * per_slice;
  const int64_t end = begin + per_slice < rows ? begin + per_slice : rows;
  double sum = 0.0;
  if (c < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kLanes) sum += load(m, r * stride + c);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  double total = 0.0;
  for (int l = 0; l < kLanes; ++l) total += partial[l][threadIdx.x];
  partials[static_cast<int64_t>(blockIdx.y) * cols + c] = total;
}

template <class T>
__global__ void sum_slices_kernel(const double* partials, int64_t slices, int64_t cols, T* out) {
  for (uint64_t c = first_index(); c < static_cast<uint64_t>(cols); c += grid_stride()) {
    double total = 0.0;
    for (int64_t s = 0; s < slices; ++s) total += partials[s * cols + static_cast<int64_t>(c)];
    store(out, c, static_cast<float>(total));
  }
}

template <class T>
__global__ void store_rows_kernel(const float* src, uint64_t n, Rows<T> dst, bool accumulate) {
  const uint64_t end = dst.positions(n);
  for (uint64_t i = first_index(); i < end; i += grid_stride()) {
    uint64_t j;
    if (!dst.logical(i, j)) {
      store(dst.p, i, 0.0f);
      continue;
    }
    store(dst.p, i, accumulate ? load(dst.p, i) + src[j] : src[j]);
  }
}

}  // namespace

cudaError_t launch_bias_rows(Elem e, void* y, int64_t stride, const void* b, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const uint64_t n = static_cast<uint64_t>(rows) * static_cast<uint64_t>(stride);
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    bias_rows_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<uint64_t>(stride), static_cast<const T*>(b),
        static_cast<uint64_t>(rows), static_cast<uint64_t>(cols));
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_column_sums(Elem e, const void* m, int64_t stride, int64_t rows, int64_t cols,
                               void* out, cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  // One column tile a block; a linear layer has at most a few thousand
  // rows (the batch), so one block's lanes walking them is plenty.
  const auto blocks = static_cast<unsigned>((cols + kColumns - 1) / kColumns);
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    column_sums_kernel<<<blocks, dim3(kColumns, kLanes), 0, stream>>>(
        static_cast<const T*>(m), stride, rows, cols, static_cast<T*>(out));
    return 0;
  });
  return cudaGetLastError();
}

uint64_t column_sum_workspace_bytes(int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<uint64_t>(slices_for(rows)) * static_cast<uint64_t>(cols) * sizeof(double);
}

cudaError_t launch_column_sums_sliced(Elem e, const void* m, int64_t stride, int64_t rows,
                                      int64_t cols, void* out, void* partials,
                                      cudaStream_t stream) {
  if (cols <= 0) return cudaSuccess;
  if (!partials) return cudaErrorInvalidValue;
  const int64_t slices = slices_for(rows);
  const int64_t per_slice = (rows + slices - 1) / slices;
  const dim3 grid(static_cast<unsigned>((cols + kColumns - 1) / kColumns),
                  static_cast<unsigned>(slices));
  auto* p = static_cast<double*>(partials);
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    column_slice_sums_kernel<<<grid, dim3(kColumns, kLanes), 0, stream>>>(
        static_cast<const T*>(m), stride, rows, cols, per_slice, p);
    sum_slices_kernel<<<blocks_for(static_cast<uint64_t>(cols)), kThreads, 0, stream>>>(
        p, slices, cols, static_cast<T*>(out));
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_store_rows(const float* src, uint64_t n, Elem e, FeatureView dst,
                              bool accumulate, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  const uint64_t end =
      dst.cols == dst.stride ? n : n / static_cast<uint64_t>(dst.cols) * dst.stride;
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    store_rows_kernel<<<blocks_for(end), kThreads, 0, stream>>>(src, n, Rows<T>(dst), accumulate);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace tr::cuda

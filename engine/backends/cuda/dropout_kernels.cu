// SPDX-License-Identifier: GPL-3.0-or-later
// Dropout kernels: one thread per feature element, or per 16 bytes of one
// row where the rows are whole vectors; the mask is a function of the
// element's index alone, so any thread layout draws the CPU's mask.
#include "backends/cuda/dropout_kernels.h"
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/training_step.cuh"
#include "backends/cuda/vector_io.cuh"
#include "core/dropout_keys.h"

namespace tr::cuda {

namespace {

// Position i of the features (padding included): its row, its column, and
// whether it is a value rather than a padding lane.
__device__ inline bool place(const DropoutRows& rows, uint64_t i, uint64_t& r, uint64_t& c) {
  if (rows.rows == 1) {
    r = 0;
    c = i;
    return true;
  }
  const uint64_t stride = static_cast<uint64_t>(rows.feature_stride);
  r = i / stride;
  c = i - r * stride;
  return c < static_cast<uint64_t>(rows.len);
}

__host__ __device__ inline uint64_t positions(const DropoutRows& rows) {
  return static_cast<uint64_t>(rows.rows * (rows.rows == 1 ? rows.len : rows.feature_stride));
}

// The draw of element (r, c): whether it is kept; keyed by the compact
// index, as on the CPU.
__device__ inline bool kept(uint64_t key, const DropoutDraw& draw, uint64_t len, uint64_t r,
                            uint64_t c) {
  return (dropout_mix(key + (draw.first + r * len + c + 1) * kDropoutGolden) >> 32) >=
         draw.threshold;
}

template <class T>
__global__ void dropout_fwd_kernel(const T* x, T* y, int8_t* mask, DropoutRows rows,
                                   DropoutDraw draw, const float* step) {
  // Every thread derives the key itself: three mixes cost less than a
  // second launch or a shared-memory handoff.
  const uint64_t key = dropout_stream_key(draw.seed, step_of(step), draw.layer);
  const uint64_t n = positions(rows);
  const uint64_t len = static_cast<uint64_t>(rows.len);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    uint64_t r, c;
    if (!place(rows, i, r, c)) {
      store(y, i, 0.0f);
      continue;
    }
    const int8_t m = kept(key, draw, len, r, c) ? 1 : 0;
    mask[r * rows.mask_stride + c] = m;
    // x * (m * scale) as the CPU computes it: a dropped inf still gives NaN.
    store(y, i, load(x, i) * (static_cast<float>(m) * draw.scale));
  }
}

template <class T>
__global__ void dropout_bwd_kernel(const int8_t* mask, const T* dy, T* dx, DropoutRows rows,
                                   float scale, bool accumulate) {
  const uint64_t n = positions(rows);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    uint64_t r, c;
    if (!place(rows, i, r, c)) {
      store(dx, i, 0.0f);
      continue;
    }
    const float d = load(dy, i) * (static_cast<float>(mask[r * rows.mask_stride + c]) * scale);
    store(dx, i, accumulate ? load(dx, i) + d : d);
  }
}

// Whether a vector of positions never straddles two rows.
template <class T>
bool whole_vectors(const DropoutRows& rows) {
  return rows.rows == 1 ? rows.len % kVec<T> == 0 : rows.feature_stride % kVec<T> == 0;
}

// Runs lanes(at, row, first column, whether the vector holds values) for each
// vector of positions this thread takes (a vector never straddles two rows).
template <class T, class I, class Lanes>
__device__ inline void each_vector(const DropoutRows& rows, Lanes lanes) {
  const I vectors = static_cast<I>(positions(rows) / kVec<T>);
  for (I i = static_cast<I>(first_index()); i < vectors; i += static_cast<I>(grid_stride())) {
    const uint64_t at = static_cast<uint64_t>(i) * kVec<T>;
    uint64_t r, c0;
    const bool values = place(rows, at, r, c0);
    lanes(at, r, c0, values);
  }
}

template <class T, class I>
__global__ void dropout_fwd_vec_kernel(const T* x, T* y, int8_t* mask, DropoutRows rows,
                                       DropoutDraw draw, const float* step) {
  const uint64_t key = dropout_stream_key(draw.seed, step_of(step), draw.layer);
  const uint64_t len = static_cast<uint64_t>(rows.len);
  each_vector<T, I>(rows, [&](uint64_t at, uint64_t r, uint64_t c0, bool values) {
    const Vec<T> in = load_vec(x, at);
    Vec<T> out;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) {
      const uint64_t c = c0 + k;
      if (!values || c >= len) {
        store(out.v, k, 0.0f);
        continue;
      }
      const int8_t m = kept(key, draw, len, r, c) ? 1 : 0;
      mask[r * rows.mask_stride + c] = m;
      store(out.v, k, load(in.v, k) * (static_cast<float>(m) * draw.scale));
    }
    store_vec(y, at, out);
  });
}

template <class T, class I>
__global__ void dropout_bwd_vec_kernel(const int8_t* mask, const T* dy, T* dx, DropoutRows rows,
                                       float scale, bool accumulate) {
  const uint64_t len = static_cast<uint64_t>(rows.len);
  each_vector<T, I>(rows, [&](uint64_t at, uint64_t r, uint64_t c0, bool values) {
    const Vec<T> g = load_vec(dy, at);
    Vec<T> out;
    if (accumulate) out = load_vec(dx, at);
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) {
      const uint64_t c = c0 + k;
      if (!values || c >= len) {
        store(out.v, k, 0.0f);
        continue;
      }
      const float d = load(g.v, k) * (static_cast<float>(mask[r * rows.mask_stride + c]) * scale);
      store(out.v, k, accumulate ? load(out.v, k) + d : d);
    }
    store_vec(dx, at, out);
  });
}

}  // namespace

cudaError_t launch_dropout_fwd(Elem e, const void* x, void* y, int8_t* mask, DropoutRows rows,
                               DropoutDraw draw, const float* step, cudaStream_t stream) {
  const uint64_t n = positions(rows);
  if (n == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* xp = static_cast<const T*>(x);
    auto* yp = static_cast<T*>(y);
    if (!whole_vectors<T>(rows) || !vectorisable<T>(n, {x, y}))
      dropout_fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(xp, yp, mask, rows, draw, step);
    else if (small_index(n))
      dropout_fwd_vec_kernel<T, uint32_t>
          <<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(xp, yp, mask, rows, draw, step);
    else
      dropout_fwd_vec_kernel<T, uint64_t>
          <<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(xp, yp, mask, rows, draw, step);
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_dropout_bwd(Elem e, const int8_t* mask, const void* dy, void* dx,
                               DropoutRows rows, float scale, bool accumulate,
                               cudaStream_t stream) {
  const uint64_t n = positions(rows);
  if (n == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* dyp = static_cast<const T*>(dy);
    auto* dxp = static_cast<T*>(dx);
    if (!whole_vectors<T>(rows) || !vectorisable<T>(n, {dy, dx}))
      dropout_bwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(mask, dyp, dxp, rows, scale,
                                                                 accumulate);
    else if (small_index(n))
      dropout_bwd_vec_kernel<T, uint32_t><<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(
          mask, dyp, dxp, rows, scale, accumulate);
    else
      dropout_bwd_vec_kernel<T, uint64_t><<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(
          mask, dyp, dxp, rows, scale, accumulate);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace tr::cuda

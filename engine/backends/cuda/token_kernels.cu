// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/token_kernels.h"

namespace tr::cuda {

namespace {

// Element i of `rows` rows of `stride` lanes: its row and lane.
struct Lane {
  int64_t row, k;
};
__device__ inline Lane lane_of(int64_t i, int64_t stride) {
  return {i / stride, i % stride};
}

template <class T>
__global__ void pos_embed_fwd_kernel(TokenMap m, const T* x, const T* e, T* y) {
  const int64_t total = m.n * m.positions * m.stride;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const Lane l = lane_of(i, m.stride);
    const int64_t p = l.row % m.positions;
    store(y, i, l.k < m.channels ? load(x, i) + load(e, p * m.channels + l.k) : 0.0f);
  }
}

// out[v] (+)= sum over the batch of in at the v-th (position, channel) of
// each sample's `rows` rows, the position offset by `skip` rows.
template <class T>
__global__ void batch_sum_kernel(TokenMap m, int64_t rows, int64_t skip, const T* in, T* out,
                                 bool accumulate, int64_t values) {
  for (int64_t v = first_index(); v < values; v += grid_stride()) {
    const int64_t p = v / m.channels, k = v % m.channels;
    float s = 0.0f;
    for (int64_t n = 0; n < m.n; ++n) s += load(in, (n * rows + skip + p) * m.stride + k);
    store(out, v, accumulate ? load(out, v) + s : s);
  }
}

// dx (+)= dy at (sample, position + skip) of `rows`-row samples, for each
// of x's positions; x's padding lanes zero.
template <class T>
__global__ void copy_back_kernel(TokenMap m, int64_t rows, int64_t skip, const T* dy, T* dx,
                                 bool accumulate) {
  const int64_t total = m.n * m.positions * m.stride;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const Lane l = lane_of(i, m.stride);
    if (l.k >= m.channels) {
      store(dx, i, 0.0f);
      continue;
    }
    const int64_t n = l.row / m.positions, p = l.row % m.positions;
    const float d = load(dy, (n * rows + skip + p) * m.stride + l.k);
    store(dx, i, accumulate ? load(dx, i) + d : d);
  }
}

template <class T>
__global__ void class_token_fwd_kernel(TokenMap m, const T* x, const T* token, T* y) {
  const int64_t rows = m.positions + 1, total = m.n * rows * m.stride;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const Lane l = lane_of(i, m.stride);
    const int64_t n = l.row / rows, t = l.row % rows;
    float v = 0.0f;
    if (l.k < m.channels)
      v = t == 0 ? load(token, l.k) : load(x, (n * m.positions + t - 1) * m.stride + l.k);
    store(y, i, v);
  }
}

template <class T>
__global__ void token_pool_fwd_kernel(TokenMap m, const T* x, T* y) {
  const int64_t total = m.n * m.stride;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const Lane l = lane_of(i, m.stride);
    store(y, i, l.k < m.channels ? load(x, l.row * m.positions * m.stride + l.k) : 0.0f);
  }
}

template <class T>
__global__ void token_pool_bwd_kernel(TokenMap m, const T* dy, T* dx, bool accumulate) {
  const int64_t total = m.n * m.positions * m.stride;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    const Lane l = lane_of(i, m.stride);
    const int64_t n = l.row / m.positions, p = l.row % m.positions;
    if (l.k >= m.channels) {
      store(dx, i, 0.0f);
    } else if (p == 0) {
      const float d = load(dy, n * m.stride + l.k);
      store(dx, i, accumulate ? load(dx, i) + d : d);
    } else if (!accumulate) {
      store(dx, i, 0.0f);
    }
  }
}

uint64_t elements(const TokenMap& m, int64_t rows_per_sample) {
  return static_cast<uint64_t>(m.n * rows_per_sample * m.stride);
}

template <class Launch>
cudaError_t typed(const TokenMap& m, Launch&& launch) {
  if (m.n > 0 && m.channels > 0) dispatch(m.elem, launch);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_pos_embed_fwd(const TokenMap& m, const void* x, const void* e, void* y,
                                 cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    pos_embed_fwd_kernel<<<blocks_for(elements(m, m.positions)), kThreads, 0, stream>>>(
        m, static_cast<const T*>(x), static_cast<const T*>(e), static_cast<T*>(y));
    return 0;
  });
}

cudaError_t launch_pos_embed_bwd(const TokenMap& m, const void* dy, void* de, bool acc_de, void* dx,
                                 bool acc_dx, cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* g = static_cast<const T*>(dy);
    const int64_t values = m.positions * m.channels;
    if (de)
      batch_sum_kernel<<<blocks_for(static_cast<uint64_t>(values)), kThreads, 0, stream>>>(
          m, m.positions, 0, g, static_cast<T*>(de), acc_de, values);
    if (dx)
      copy_back_kernel<<<blocks_for(elements(m, m.positions)), kThreads, 0, stream>>>(
          m, m.positions, 0, g, static_cast<T*>(dx), acc_dx);
    return 0;
  });
}

cudaError_t launch_class_token_fwd(const TokenMap& m, const void* x, const void* token, void* y,
                                   cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    class_token_fwd_kernel<<<blocks_for(elements(m, m.positions + 1)), kThreads, 0, stream>>>(
        m, static_cast<const T*>(x), static_cast<const T*>(token), static_cast<T*>(y));
    return 0;
  });
}

cudaError_t launch_class_token_bwd(const TokenMap& m, const void* dy, void* dtoken, bool acc_token,
                                   void* dx, bool acc_dx, cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* g = static_cast<const T*>(dy);
    if (dtoken)
      batch_sum_kernel<<<blocks_for(static_cast<uint64_t>(m.channels)), kThreads, 0, stream>>>(
          m, m.positions + 1, 0, g, static_cast<T*>(dtoken), acc_token, m.channels);
    if (dx)
      copy_back_kernel<<<blocks_for(elements(m, m.positions)), kThreads, 0, stream>>>(
          m, m.positions + 1, 1, g, static_cast<T*>(dx), acc_dx);
    return 0;
  });
}

cudaError_t launch_token_pool_fwd(const TokenMap& m, const void* x, void* y, cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    token_pool_fwd_kernel<<<blocks_for(elements(m, 1)), kThreads, 0, stream>>>(
        m, static_cast<const T*>(x), static_cast<T*>(y));
    return 0;
  });
}

cudaError_t launch_token_pool_bwd(const TokenMap& m, const void* dy, void* dx, bool acc_dx,
                                  cudaStream_t stream) {
  return typed(m, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    token_pool_bwd_kernel<<<blocks_for(elements(m, m.positions)), kThreads, 0, stream>>>(
        m, static_cast<const T*>(dy), static_cast<T*>(dx), acc_dx);
    return 0;
  });
}

}  // namespace tr::cuda

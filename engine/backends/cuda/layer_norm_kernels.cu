// SPDX-License-Identifier: GPL-3.0-or-later
// A warp per row: 32 lanes stride over its channels, reduce with a fixed
// butterfly (every lane ends with the same sums), then write the row. The
// parameter gradients: a thread per (chunk of rows, channel) sums its rows in
// order into a double partial, and a thread per channel folds the partials
// in chunk order.
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/layer_norm_kernels.h"

namespace tr::cuda {

namespace {

// Row chunks of the parameter gradients: fixed by the row count alone.
constexpr int64_t kMaxChunks = 64;

int64_t chunks_for(int64_t rows) {
  return rows < kMaxChunks ? (rows < 1 ? 1 : rows) : kMaxChunks;
}

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline int64_t warp_index() {
  return static_cast<int64_t>((blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x) >> 5);
}
__device__ inline int64_t warp_count() {
  return static_cast<int64_t>((gridDim.x * static_cast<uint64_t>(blockDim.x)) >> 5);
}

template <class T>
__global__ void layer_norm_fwd_kernel(LayerNormRows r, const T* x, const float* gamma,
                                      const float* beta, T* y, float* saved) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  for (int64_t row = warp_index(); row < r.rows; row += warp_count()) {
    const T* xr = x + row * r.stride;
    // About the row's first value, as the CPU: a large mean does not cancel.
    const double k = load(xr, 0);
    double s1 = 0, s2 = 0;
    for (int64_t i = lane; i < r.channels; i += 32) {
      const double d = load(xr, i) - k;
      s1 += d;
      s2 += d * d;
    }
    s1 = warp_sum(s1);
    s2 = warp_sum(s2);
    const double n = static_cast<double>(r.channels);
    const double var = fmax(0.0, (s2 - s1 * s1 / n) / n);
    const float mean = static_cast<float>(k + s1 / n);
    const float inv_std = static_cast<float>(1.0 / sqrt(var + r.eps));
    T* yr = y + row * r.stride;
    for (int64_t i = lane; i < r.stride; i += 32)
      store(yr, i,
            i < r.channels ? __fmul_rn(__fmul_rn(load(xr, i) - mean, inv_std), gamma[i]) + beta[i]
                           : 0.0f);
    if (saved && lane == 0) {
      saved[2 * row] = mean;
      saved[2 * row + 1] = inv_std;
    }
  }
}

template <class T>
__global__ void layer_norm_dx_kernel(LayerNormBwd b, const T* x, const T* dy, T* dx) {
  const LayerNormRows& r = b.rows;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  for (int64_t row = warp_index(); row < r.rows; row += warp_count()) {
    const T* xr = x + row * r.stride;
    const T* dyr = dy + row * r.stride;
    const float mean = b.saved[2 * row], inv_std = b.saved[2 * row + 1];
    double sg = 0, sgx = 0;
    for (int64_t i = lane; i < r.channels; i += 32) {
      const float xhat = __fmul_rn(load(xr, i) - mean, inv_std);
      const float g = __fmul_rn(load(dyr, i), b.gamma[i]);
      sg += g;
      sgx += static_cast<double>(g) * xhat;
    }
    sg = warp_sum(sg);
    sgx = warp_sum(sgx);
    const float mg = static_cast<float>(sg / static_cast<double>(r.channels));
    const float mgx = static_cast<float>(sgx / static_cast<double>(r.channels));
    T* dxr = dx + row * r.stride;
    for (int64_t i = lane; i < r.stride; i += 32) {
      if (i >= r.channels) {
        store(dxr, i, 0.0f);
        continue;
      }
      const float xhat = __fmul_rn(load(xr, i) - mean, inv_std);
      const float g = __fmul_rn(load(dyr, i), b.gamma[i]);
      const float d = __fmul_rn(inv_std, g - mg - __fmul_rn(xhat, mgx));
      store(dxr, i, b.accumulate_dx ? load(dxr, i) + d : d);
    }
  }
}

template <class T>
__global__ void layer_norm_param_partials_kernel(LayerNormRows r, const T* x, const float* saved,
                                                 const T* dy, double* partials, int64_t chunks) {
  const int64_t n = chunks * r.channels;
  for (int64_t t = static_cast<int64_t>(first_index()); t < n;
       t += static_cast<int64_t>(grid_stride())) {
    const int64_t chunk = t / r.channels, ch = t - chunk * r.channels;
    const int64_t lo = r.rows * chunk / chunks, hi = r.rows * (chunk + 1) / chunks;
    double dg = 0, db = 0;
    for (int64_t row = lo; row < hi; ++row) {
      const float xhat =
          __fmul_rn(load(x, row * r.stride + ch) - saved[2 * row], saved[2 * row + 1]);
      const float d = load(dy, row * r.stride + ch);
      dg += static_cast<double>(d) * xhat;
      db += d;
    }
    partials[(2 * chunk) * r.channels + ch] = dg;
    partials[(2 * chunk + 1) * r.channels + ch] = db;
  }
}

__global__ void layer_norm_param_fold_kernel(LayerNormBwd b, const double* partials,
                                             int64_t chunks) {
  const int64_t c = b.rows.channels;
  for (int64_t ch = static_cast<int64_t>(first_index()); ch < c;
       ch += static_cast<int64_t>(grid_stride())) {
    double dg = 0, db = 0;
    for (int64_t k = 0; k < chunks; ++k) {
      dg += partials[(2 * k) * c + ch];
      db += partials[(2 * k + 1) * c + ch];
    }
    if (b.dgamma) b.dgamma[ch] = static_cast<float>(b.accumulate_dgamma ? b.dgamma[ch] + dg : dg);
    if (b.dbeta) b.dbeta[ch] = static_cast<float>(b.accumulate_dbeta ? b.dbeta[ch] + db : db);
  }
}

unsigned warp_blocks(int64_t rows) {
  return blocks_for(static_cast<uint64_t>(rows) * 32);
}

}  // namespace

uint64_t layer_norm_workspace_bytes(int64_t rows, int64_t channels) {
  return static_cast<uint64_t>(2 * chunks_for(rows) * channels) * sizeof(double);
}

cudaError_t launch_layer_norm_fwd(const LayerNormRows& r, const void* x, const float* gamma,
                                  const float* beta, void* y, float* saved, cudaStream_t stream) {
  if (r.rows == 0) return cudaGetLastError();
  dispatch(r.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    layer_norm_fwd_kernel<<<warp_blocks(r.rows), kThreads, 0, stream>>>(
        r, static_cast<const T*>(x), gamma, beta, static_cast<T*>(y), saved);
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_bwd(const LayerNormBwd& b, cudaStream_t stream) {
  const LayerNormRows& r = b.rows;
  if (r.rows == 0) return cudaGetLastError();
  dispatch(r.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* x = static_cast<const T*>(b.x);
    const auto* dy = static_cast<const T*>(b.dy);
    if (b.dx)
      layer_norm_dx_kernel<<<warp_blocks(r.rows), kThreads, 0, stream>>>(b, x, dy,
                                                                         static_cast<T*>(b.dx));
    if (b.dgamma || b.dbeta) {
      const int64_t chunks = chunks_for(r.rows);
      auto* partials = static_cast<double*>(b.workspace);
      layer_norm_param_partials_kernel<<<blocks_for(static_cast<uint64_t>(chunks * r.channels)),
                                         kThreads, 0, stream>>>(r, x, b.saved, dy, partials,
                                                                chunks);
      layer_norm_param_fold_kernel<<<blocks_for(static_cast<uint64_t>(r.channels)), kThreads, 0,
                                     stream>>>(b, partials, chunks);
    }
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace tr::cuda

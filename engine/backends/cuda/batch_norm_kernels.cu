// SPDX-License-Identifier: GPL-3.0-or-later
// Batch normalisation kernels. A block is 32 channels (one warp reads 32
// adjacent floats of a row: coalesced in NHWC) by 8 row lanes. Statistics
// take two launches: each block reduces a fixed slice of rows to double
// partials in the workspace, then a block per channel folds the slices by a
// fixed tree (fold_moments, fold_sums). The slicing and the tree depend only
// on the shape, so the result is the same on every run and every GPU. The
// elementwise float arithmetic uses _rn intrinsics: unfused, as the CPU twin
// rounds it, so the fused ReLU's mask and the outputs agree with it. The
// elementwise passes move 16 bytes a thread where the layout allows (see
// "vectorised" below). Kernels touching features are
// templated on their storage type T (float, __half or __nv_bfloat16); gamma,
// beta and their gradients are FP32 at every precision.
#include "backends/cuda/batch_norm_kernels.h"
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/vector_io.cuh"

#include <initializer_list>

namespace tr::cuda {

namespace {

constexpr int kTile = 32;                 // channels per block (x)
constexpr int kLanes = kThreads / kTile;  // rows in flight per block (y)
// A slice is at least this many rows (32 per thread), and there are about
// kTargetBlocks blocks in all: enough to fill an H200 several times.
constexpr int64_t kMinSliceRows = 256;
constexpr int64_t kTargetBlocks = 1024;
constexpr int kEqLayersPerLaunch = 16;  // 1 KiB of kernel parameters

int64_t tiles_of(int64_t channels) {
  return (channels + kTile - 1) / kTile;
}

int64_t slices_of(int64_t rows, int64_t channels) {
  const int64_t by_rows = (rows + kMinSliceRows - 1) / kMinSliceRows;
  const int64_t by_blocks = kTargetBlocks / tiles_of(channels);
  int64_t s = by_rows < by_blocks ? by_rows : by_blocks;
  return s < 1 ? 1 : s;
}

// Workspace: per-slice double partials (two arrays of slices x channels),
// four float rows of per-channel coefficients, then SyncBatchNorm's buffer
// of 2 * channels + 1 floats that the ranks sum.
struct Workspace {
  double* a;
  double* b;
  float* coef;  // 4 * channels
  float* sync;  // 2 * channels + 1
};

Workspace carve(void* base, int64_t slices, int64_t channels) {
  double* d = static_cast<double*>(base);
  float* coef = reinterpret_cast<float*>(d + 2 * slices * channels);
  return {d, d + slices * channels, coef, coef + 4 * channels};
}

__device__ inline float fmul(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ inline float fadd(float a, float b) {
  return __fadd_rn(a, b);
}

// (x - mean) * scale + shift, rounded step by step as on the CPU.
__device__ inline float pre_activation(float x, float mean, float scale, float shift) {
  return fadd(fmul(__fsub_rn(x, mean), scale), shift);
}

// NaN passes the ReLU, as in torch.relu, so the NaN check still sees it.
__device__ inline float relu_if(bool relu, float v) {
  return relu && v < 0.0f ? 0.0f : v;
}

__device__ inline int64_t slice_begin(int64_t rows, int64_t slices, int64_t s) {
  return rows * s / slices;
}

// Sums the kLanes row lanes of a block per channel, in lane order, into
// lane 0's thread. Every thread of the block must call it.
__device__ inline void lane_sums(double& u, double& v) {
  __shared__ double su[kLanes][kTile], sv[kLanes][kTile];
  su[threadIdx.y][threadIdx.x] = u;
  sv[threadIdx.y][threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.y == 0)
    for (int l = 1; l < kLanes; ++l) {
      u += su[l][threadIdx.x];
      v += sv[l][threadIdx.x];
    }
}

// Per slice and channel: mean and m2 (sum of squared deviations). The sums
// run about the slice's first value of the channel, one of the samples, so
// s2 - s1^2/n stays accurate when the mean is large against the spread.
template <class T>
__global__ void moments_kernel(const T* x, int64_t rows, int64_t channels, int64_t stride,
                               int64_t slices, double* part_mean, double* part_m2) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.x;
  const int64_t s = blockIdx.x;
  const int64_t lo = slice_begin(rows, slices, s), hi = slice_begin(rows, slices, s + 1);
  double s1 = 0.0, s2 = 0.0, k = 0.0;
  if (c < channels) {
    k = load(x, lo * stride + c);
    for (int64_t m = lo + threadIdx.y; m < hi; m += kLanes) {
      const double d = load(x, m * stride + c) - k;
      s1 += d;
      s2 += d * d;
    }
  }
  lane_sums(s1, s2);
  if (threadIdx.y != 0 || c >= channels) return;
  const double n = static_cast<double>(hi - lo);
  part_mean[s * channels + c] = k + s1 / n;
  const double v = s2 - s1 * s1 / n;
  part_m2[s * channels + c] = v < 0.0 ? 0.0 : v;  // rounding can dip below zero; a NaN stays
}

// The per-channel folds of the slice partials run one block per channel
// (blockIdx.x): thread t folds a contiguous run of slices in slice order,
// then the threads' results merge pairwise in shared memory, t with
// t + half for half = 64, 32, ..., 1. The tree depends only on the slice
// count, so the result is the same on every run, and no thread walks all the
// slices alone (a thread per channel waited on hundreds of dependent loads).
constexpr int kFoldThreads = 128;

__device__ inline int64_t fold_begin(int64_t slices, int t) {
  return slices * t / kFoldThreads;
}

// Chan et al.'s pairwise update: (n_a, mean_a, m2_a) absorbs (n_b, mean_b, m2_b).
__device__ inline void merge_moments(double& n_a, double& mean_a, double& m2_a, double n_b,
                                     double mean_b, double m2_b) {
  if (n_b == 0.0) return;
  if (n_a == 0.0) {
    n_a = n_b;
    mean_a = mean_b;
    m2_a = m2_b;
    return;
  }
  const double n = n_a + n_b;
  const double delta = mean_b - mean_a;
  mean_a += delta * (n_b / n);
  m2_a += m2_b + delta * delta * (n_a * n_b / n);
  n_a = n;
}

// Channel c's mean and m2 over all slices, in thread 0. Every thread of the
// block must call it.
__device__ inline void fold_moments(int64_t rows, int64_t channels, int64_t slices,
                                    const Workspace& w, int64_t c, double& mean, double& m2) {
  __shared__ double sn[kFoldThreads], smean[kFoldThreads], sm2[kFoldThreads];
  const int t = threadIdx.x;
  double n_a = 0.0, mean_a = 0.0, m2_a = 0.0;
  for (int64_t s = fold_begin(slices, t); s < fold_begin(slices, t + 1); ++s)
    merge_moments(
        n_a, mean_a, m2_a,
        static_cast<double>(slice_begin(rows, slices, s + 1) - slice_begin(rows, slices, s)),
        w.a[s * channels + c], w.b[s * channels + c]);
  sn[t] = n_a;
  smean[t] = mean_a;
  sm2[t] = m2_a;
  __syncthreads();
  for (int half = kFoldThreads / 2; half > 0; half /= 2) {
    if (t < half)
      merge_moments(sn[t], smean[t], sm2[t], sn[t + half], smean[t + half], sm2[t + half]);
    __syncthreads();
  }
  mean = smean[0];
  m2 = sm2[0];
}

// Channel c's sums of two partial rows over all slices, in thread 0, by the
// same fixed tree. Every thread of the block must call it.
__device__ inline void fold_sums(int64_t channels, int64_t slices, const Workspace& w, int64_t c,
                                 double& u, double& v) {
  __shared__ double su[kFoldThreads], sv[kFoldThreads];
  const int t = threadIdx.x;
  double a = 0.0, b = 0.0;
  for (int64_t s = fold_begin(slices, t); s < fold_begin(slices, t + 1); ++s) {
    a += w.a[s * channels + c];
    b += w.b[s * channels + c];
  }
  su[t] = a;
  sv[t] = b;
  __syncthreads();
  for (int half = kFoldThreads / 2; half > 0; half /= 2) {
    if (t < half) {
      su[t] += su[t + half];
      sv[t] += sv[t + half];
    }
    __syncthreads();
  }
  u = su[0];
  v = sv[0];
}

// The saved and running statistics and the scale for the apply pass, from
// channel c's mean and m2 over `count` rows (this rank's, or every rank's).
template <class T>
__device__ inline void write_stats(const BnTrain& b, const Workspace& w, int64_t c, double mean,
                                   double m2, double count) {
  const int64_t C = b.channels;
  const float mean_f = static_cast<float>(mean);
  const double var = m2 / count;
  // As in PyTorch: the biased variance normalises, the unbiased one feeds the
  // running estimate (the biased one stands in for a single value).
  const double unbiased = count > 1 ? m2 / (count - 1) : var;
  const double inv_std = 1.0 / sqrt(var + b.eps);
  b.saved[c] = mean_f;
  b.saved[C + c] = static_cast<float>(inv_std);
  b.next_mean[c] = static_cast<float>((1.0 - b.momentum) * b.prev_mean[c] + b.momentum * mean_f);
  b.next_var[c] = static_cast<float>((1.0 - b.momentum) * b.prev_var[c] + b.momentum * unbiased);
  w.coef[c] = static_cast<float>(b.gamma[c] * inv_std);
}

template <class T>
__global__ void train_stats_kernel(BnTrain b, int64_t slices, Workspace w) {
  const int64_t c = blockIdx.x;  // a block per channel (fold_moments)
  double mean = 0, m2 = 0;
  fold_moments(b.rows, b.channels, slices, w, c, mean, m2);
  if (threadIdx.x == 0) write_stats<T>(b, w, c, mean, m2, static_cast<double>(b.rows));
}

// SyncBatchNorm, step 1: this rank's moments kept in w.a/w.b (slot c), and
// the first sum's buffer [mean * rows per channel, rows], rounded to float
// as the CPU twin's buffer is.
__global__ void sync_local_moments_kernel(BnTrain b, int64_t slices, Workspace w) {
  const int64_t c = blockIdx.x;  // a block per channel (fold_moments)
  double mean = 0, m2 = 0;
  fold_moments(b.rows, b.channels, slices, w, c, mean, m2);
  if (threadIdx.x != 0) return;
  w.a[c] = mean;
  w.b[c] = m2;
  w.sync[c] = static_cast<float>(mean * static_cast<double>(b.rows));
  if (c == 0) w.sync[b.channels] = static_cast<float>(b.rows);
}

// Step 2, after the first sum: the global mean, and the second sum's buffer
// of each rank's squared deviations about it (its m2 plus rows * shift^2).
__global__ void sync_deviations_kernel(BnTrain b, Workspace w) {
  const int64_t c = first_index();
  if (c >= b.channels) return;
  const double n = w.sync[b.channels];
  const double global = w.sync[c] / n;
  const double d = w.a[c] - global;
  w.sync[c] = static_cast<float>(w.b[c] + static_cast<double>(b.rows) * d * d);
  w.a[c] = global;
}

// Step 3, after the second sum: the statistics of the global batch.
template <class T>
__global__ void sync_stats_kernel(BnTrain b, Workspace w) {
  const int64_t c = first_index();
  if (c >= b.channels) return;
  write_stats<T>(b, w, c, w.a[c], w.sync[c], w.sync[b.channels]);
}

// Zeroes the padding lanes of channel c (>= channels) of an output: the
// elementwise passes cover the row stride, not just the channels.
template <class T>
__device__ inline void zero_padding(T* y, int64_t c, int64_t rows, int64_t stride) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kLanes;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.y; m < rows; m += step)
    store(y, m * stride + c, 0.0f);
}

template <class T>
__global__ void train_apply_kernel(BnTrain b, const float* scale) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.x;
  const T* x = static_cast<const T*>(b.x);
  T* y = static_cast<T*>(b.y);
  if (c >= b.stride) return;
  if (c >= b.channels) return zero_padding(y, c, b.rows, b.stride);
  const float mean = b.saved[c], sc = scale[c], sh = b.beta[c];
  const int64_t step = static_cast<int64_t>(gridDim.x) * kLanes;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.y; m < b.rows; m += step) {
    const int64_t at = m * b.stride + c;
    store(y, at, relu_if(b.relu, pre_activation(load(x, at), mean, sc, sh)));
  }
}

template <class T>
__global__ void infer_kernel(BnInfer b) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.x;
  const T* x = static_cast<const T*>(b.x);
  T* y = static_cast<T*>(b.y);
  if (c >= b.stride) return;
  if (c >= b.channels) return zero_padding(y, c, b.rows, b.stride);
  const float sc = b.scale[c], bi = b.bias[c];
  const int64_t step = static_cast<int64_t>(gridDim.x) * kLanes;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.y; m < b.rows; m += step) {
    const int64_t at = m * b.stride + c;
    store(y, at, relu_if(b.relu, fadd(fmul(load(x, at), sc), bi)));
  }
}

// The fused ReLU's scale, recomputed from the saved (float) inv_std as the
// CPU backward does; the forward's double one can differ only at the kink.
template <class T>
__device__ inline float relu_scale(const BnBackward& b, int64_t c) {
  return static_cast<float>(static_cast<double>(b.gamma[c]) * b.saved[b.channels + c]);
}

// The gradient reaching the BN output: dy, or for a fused ReLU dy where the
// BN output was positive.
__device__ inline float out_grad(const BnBackward& b, float dy, float x, float mean, float sc,
                                 float sh) {
  return b.relu && !(pre_activation(x, mean, sc, sh) > 0.0f) ? 0.0f : dy;
}

// Per slice and channel: sums of g and g * (x - mean), g from out_grad.
template <class T>
__global__ void grad_sums_kernel(BnBackward b, int64_t slices, Workspace w) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.x;
  const int64_t s = blockIdx.x;
  const int64_t lo = slice_begin(b.rows, slices, s), hi = slice_begin(b.rows, slices, s + 1);
  double sdy = 0.0, sdyx = 0.0;
  if (c < b.channels) {
    const float mean = b.saved[c];
    const float sc = b.relu ? relu_scale<T>(b, c) : 0.0f;
    const float sh = b.relu ? b.beta[c] : 0.0f;
    for (int64_t m = lo + threadIdx.y; m < hi; m += kLanes) {
      const int64_t at = m * b.stride + c;
      const float x = load(static_cast<const T*>(b.x), at);
      const double g = out_grad(b, load(static_cast<const T*>(b.dy), at), x, mean, sc, sh);
      sdy += g;
      sdyx += g * __fsub_rn(x, mean);
    }
  }
  lane_sums(sdy, sdyx);
  if (threadIdx.y != 0 || c >= b.channels) return;
  w.a[s * b.channels + c] = sdy;
  w.b[s * b.channels + c] = sdyx;
}

// dx = k_dy * g + k_x * (x - mean) + k_0 for channel c, from the sums of g
// and g * (x - mean) over `count` rows.
template <class T>
__device__ inline void write_dx_coef(const BnBackward& b, const Workspace& w, int64_t c, double sdy,
                                     double sdyx, double count) {
  const int64_t C = b.channels;
  const float inv_std = b.saved[C + c];
  const double dgamma = sdyx * inv_std;
  const double inv_m = 1.0 / count;
  const double k = static_cast<double>(b.gamma[c]) * inv_std;
  w.coef[c] = static_cast<float>(k);
  w.coef[C + c] = static_cast<float>(-k * inv_std * dgamma * inv_m);
  w.coef[2 * C + c] = static_cast<float>(-k * sdy * inv_m);
  if (b.relu) w.coef[3 * C + c] = relu_scale<T>(b, c);
}

// Sums the slices in order, writes dgamma and dbeta, and folds dx into
// dx = k_dy * g + k_x * (x - mean) + k_0 per channel (x - mean explicit so
// that a large mean does not cancel in float).
template <class T>
__global__ void grad_finish_kernel(BnBackward b, int64_t slices, Workspace w) {
  const int64_t c = blockIdx.x;  // a block per channel (fold_sums)
  const int64_t C = b.channels;
  double sdy = 0.0, sdyx = 0.0;
  fold_sums(C, slices, w, c, sdy, sdyx);
  if (threadIdx.x != 0) return;
  const float inv_std = b.saved[C + c];
  const double dgamma = sdyx * inv_std;
  // FP32 at every precision: dbeta sums N*H*W loss-scaled rows.
  if (b.dgamma) b.dgamma[c] = static_cast<float>(b.acc_dgamma ? b.dgamma[c] + dgamma : dgamma);
  if (b.dbeta) b.dbeta[c] = static_cast<float>(b.acc_dbeta ? b.dbeta[c] + sdy : sdy);
  if (!b.dx) return;
  if (b.rank_sum.sum) {
    // SyncBatchNorm: dx needs the sums over every rank's rows.
    w.sync[c] = static_cast<float>(sdy);
    w.sync[C + c] = static_cast<float>(sdyx);
    if (c == 0) w.sync[2 * C] = static_cast<float>(b.rows);
    return;
  }
  write_dx_coef<T>(b, w, c, sdy, sdyx, static_cast<double>(b.rows));
}

// SyncBatchNorm, after the sum: dx's coefficients from every rank's sums.
template <class T>
__global__ void sync_dx_coef_kernel(BnBackward b, Workspace w) {
  const int64_t c = first_index();
  if (c >= b.channels) return;
  const int64_t C = b.channels;
  write_dx_coef<T>(b, w, c, w.sync[c], w.sync[C + c], w.sync[2 * C]);
}

template <class T>
__global__ void grad_dx_kernel(BnBackward b, Workspace w) {
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.x;
  T* dx = static_cast<T*>(b.dx);
  if (c >= b.stride) return;
  if (c >= b.channels) return zero_padding(dx, c, b.rows, b.stride);
  const int64_t C = b.channels;
  const float mean = b.saved[c];
  const float k_dy = w.coef[c], k_x = w.coef[C + c], k_0 = w.coef[2 * C + c];
  const float sc = b.relu ? w.coef[3 * C + c] : 0.0f;
  const float sh = b.relu ? b.beta[c] : 0.0f;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kLanes;
  for (int64_t m = static_cast<int64_t>(blockIdx.x) * kLanes + threadIdx.y; m < b.rows; m += step) {
    const int64_t at = m * b.stride + c;
    const float x = load(static_cast<const T*>(b.x), at);
    const float g = out_grad(b, load(static_cast<const T*>(b.dy), at), x, mean, sc, sh);
    const float v = fadd(fadd(fmul(k_dy, g), fmul(k_x, __fsub_rn(x, mean))), k_0);
    store(dx, at, b.acc_dx ? fadd(load(dx, at), v) : v);
  }
}

// ---------------------------------------------------------------------------
// The elementwise passes, vectorised: a thread takes 16 bytes of a row at a
// time (8 FP16 or BF16 values, 4 FP32), kInFlight of them loaded before any
// is computed, with 32-bit indices when the tensor allows. Used when the row
// stride is a whole number of vectors and the tensors start on 16 bytes (the
// plan pads 16-bit rows to 8 and starts tensors on 256 bytes). The
// per-element arithmetic is the scalar kernels' above, so the bits are too;
// padding lanes are written as zero.

constexpr int kInFlight = 4;

unsigned vector_blocks(int64_t rows, int64_t stride, int vec) {
  return blocks_for(static_cast<uint64_t>(rows * (stride / vec) + kInFlight - 1) / kInFlight);
}

// Calls f(row, first channel, vector index) for every vector of rows x
// stride elements; kInFlight vectors of a thread go through `load` before any
// through `f`.
template <class T, class I, class Load, class F>
__device__ inline void for_vectors(I rows, I stride, Load fetch, F f) {
  const I groups = stride / kVec<T>;
  const I total = rows * groups;
  const I step = static_cast<I>(gridDim.x) * blockDim.x;
  for (I base = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; base < total;
       base += step * kInFlight) {
    decltype(fetch(I{0})) in[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i < total) {
        const I row = i / groups;
        in[u] = fetch(row * stride + (i - row * groups) * kVec<T>);
      }
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const I i = base + static_cast<I>(u) * step;
      if (i >= total) break;
      const I row = i / groups;
      const I c0 = (i - row * groups) * kVec<T>;
      f(row * stride + c0, c0, in[u]);
    }
  }
}

// y = f(x, c) for every channel c of every row, zero in the padding lanes.
template <class T, class I, class F>
__device__ inline void map_channels(const void* xv, void* yv, int64_t rows, int64_t stride,
                                    int64_t channel_count, F f) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  const I channels = static_cast<I>(channel_count);
  for_vectors<T>(
      static_cast<I>(rows), static_cast<I>(stride), [&](I at) { return load_vec(x, at); },
      [&](I at, I c0, const Vec<T>& in) {
        Vec<T> out;
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
          const I c = c0 + static_cast<I>(k);
          store(out.v, k, c < channels ? f(load(in.v, k), c) : 0.0f);
        }
        store_vec(y, at, out);
      });
}

template <class T, class I>
__global__ void train_apply_vec_kernel(BnTrain b, const float* scale) {
  map_channels<T, I>(b.x, b.y, b.rows, b.stride, b.channels, [&](float x, I c) {
    return relu_if(b.relu, pre_activation(x, b.saved[c], scale[c], b.beta[c]));
  });
}

template <class T, class I>
__global__ void infer_vec_kernel(BnInfer b) {
  map_channels<T, I>(b.x, b.y, b.rows, b.stride, b.channels, [&](float x, I c) {
    return relu_if(b.relu, fadd(fmul(x, b.scale[c]), b.bias[c]));
  });
}

// x, dy and (accumulating) dx, one vector each.
template <class T>
struct DxIn {
  Vec<T> x, dy, dx;
};

template <class T, class I>
__global__ void grad_dx_vec_kernel(BnBackward b, Workspace w) {
  const T* x = static_cast<const T*>(b.x);
  const T* dy = static_cast<const T*>(b.dy);
  T* dx = static_cast<T*>(b.dx);
  const I channels = static_cast<I>(b.channels);
  for_vectors<T>(
      static_cast<I>(b.rows), static_cast<I>(b.stride),
      [&](I at) {
        DxIn<T> in;
        in.x = load_vec(x, at);
        in.dy = load_vec(dy, at);
        if (b.acc_dx) in.dx = load_vec(dx, at);
        return in;
      },
      [&](I at, I c0, const DxIn<T>& in) {
        Vec<T> out;
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
          const I c = c0 + static_cast<I>(k);
          float r = 0.0f;
          if (c < channels) {
            const I C = channels;
            const float mean = b.saved[c];
            const float sc = b.relu ? w.coef[3 * C + c] : 0.0f;
            const float sh = b.relu ? b.beta[c] : 0.0f;
            const float xv = load(in.x.v, k);
            const float g = out_grad(b, load(in.dy.v, k), xv, mean, sc, sh);
            const float v = fadd(fadd(fmul(w.coef[c], g), fmul(w.coef[C + c], __fsub_rn(xv, mean))),
                                 w.coef[2 * C + c]);
            r = b.acc_dx ? fadd(load(in.dx.v, k), v) : v;
          }
          store(out.v, k, r);
        }
        store_vec(dx, at, out);
      });
}

// The statistics passes, vectorised: a block is kVecTile vectors of channels
// (64 FP16/BF16 channels, 32 FP32) by kVecLanes row lanes, each thread
// summing its vector's channels over rows lo + lane, lo + lane + kVecLanes,
// ... of its slice, in double; the lanes then fold in lane order. The slices
// are the scalar kernels' (slices_of), so the workspace is the same; the
// order of the sums within a slice differs, and is fixed by the shape.
constexpr int kVecTile = 8;
constexpr int kVecLanes = kThreads / kVecTile;

// Sums each channel's kVecLanes lanes, in lane order, into lane 0's thread
// (threadIdx.y == 0). Every thread of the block must call it.
template <int N>
__device__ inline void vec_lane_sums(double (&u)[N], double (&v)[N]) {
  __shared__ double su[kVecLanes][kVecTile][N], sv[kVecLanes][kVecTile][N];
#pragma unroll
  for (int k = 0; k < N; ++k) {
    su[threadIdx.y][threadIdx.x][k] = u[k];
    sv[threadIdx.y][threadIdx.x][k] = v[k];
  }
  __syncthreads();
  if (threadIdx.y == 0)
    for (int l = 1; l < kVecLanes; ++l)
#pragma unroll
      for (int k = 0; k < N; ++k) {
        u[k] += su[l][threadIdx.x][k];
        v[k] += sv[l][threadIdx.x][k];
      }
}

template <class T>
__global__ void moments_vec_kernel(const T* x, int64_t rows, int64_t channels, int64_t stride,
                                   int64_t slices, double* part_mean, double* part_m2) {
  constexpr int N = kVec<T>;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.y) * kVecTile + threadIdx.x) * N;
  const int64_t s = blockIdx.x;
  const int64_t lo = slice_begin(rows, slices, s), hi = slice_begin(rows, slices, s + 1);
  double s1[N], s2[N], k[N];
#pragma unroll
  for (int j = 0; j < N; ++j) s1[j] = s2[j] = k[j] = 0.0;
  if (c0 < stride) {
    const Vec<T> first = load_vec(x, lo * stride + c0);
#pragma unroll
    for (int j = 0; j < N; ++j) k[j] = load(first.v, j);
    for (int64_t m = lo + threadIdx.y; m < hi; m += kVecLanes) {
      const Vec<T> r = load_vec(x, m * stride + c0);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const double d = load(r.v, j) - k[j];
        s1[j] += d;
        s2[j] += d * d;
      }
    }
  }
  vec_lane_sums(s1, s2);
  if (threadIdx.y != 0) return;
  const double n = static_cast<double>(hi - lo);
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int64_t c = c0 + j;
    if (c >= channels) break;
    part_mean[s * channels + c] = k[j] + s1[j] / n;
    const double v = s2[j] - s1[j] * s1[j] / n;
    part_m2[s * channels + c] = v < 0.0 ? 0.0 : v;  // rounding can dip below zero; a NaN stays
  }
}

template <class T>
__global__ void grad_sums_vec_kernel(BnBackward b, int64_t slices, Workspace w) {
  constexpr int N = kVec<T>;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.y) * kVecTile + threadIdx.x) * N;
  const int64_t s = blockIdx.x;
  const int64_t lo = slice_begin(b.rows, slices, s), hi = slice_begin(b.rows, slices, s + 1);
  double sdy[N], sdyx[N];
  float mean[N], sc[N], sh[N];
#pragma unroll
  for (int j = 0; j < N; ++j) {
    sdy[j] = sdyx[j] = 0.0;
    const int64_t c = c0 + j;
    const bool real = c < b.channels;
    mean[j] = real ? b.saved[c] : 0.0f;
    sc[j] = real && b.relu ? relu_scale<T>(b, c) : 0.0f;
    sh[j] = real && b.relu ? b.beta[c] : 0.0f;
  }
  if (c0 < b.stride)
    for (int64_t m = lo + threadIdx.y; m < hi; m += kVecLanes) {
      const int64_t at = m * b.stride + c0;
      const Vec<T> xr = load_vec(static_cast<const T*>(b.x), at);
      const Vec<T> gr = load_vec(static_cast<const T*>(b.dy), at);
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const float x = load(xr.v, j);
        const double g = out_grad(b, load(gr.v, j), x, mean[j], sc[j], sh[j]);
        sdy[j] += g;
        sdyx[j] += g * __fsub_rn(x, mean[j]);
      }
    }
  vec_lane_sums(sdy, sdyx);
  if (threadIdx.y != 0) return;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int64_t c = c0 + j;
    if (c >= b.channels) break;
    w.a[s * b.channels + c] = sdy[j];
    w.b[s * b.channels + c] = sdyx[j];
  }
}

// The statistics passes' grid: slices by tiles of kVecTile vectors.
template <class T>
dim3 vec_slice_grid(int64_t rows, int64_t channels, int64_t stride) {
  const int64_t per_tile = static_cast<int64_t>(kVecTile) * kVec<T>;
  return dim3(static_cast<unsigned>(slices_of(rows, channels)),
              static_cast<unsigned>((stride + per_tile - 1) / per_tile));
}

// Launches the vectorised kernel when the tensors allow, else the scalar one.
template <class T, class Vec32, class Vec64, class Scalar>
void launch_elementwise(int64_t rows, int64_t stride, std::initializer_list<const void*> tensors,
                        Vec32 vec32, Vec64 vec64, Scalar scalar) {
  if (rows <= 0 || stride % kVec<T> != 0 ||
      !vectorisable<T>(static_cast<uint64_t>(rows * stride), tensors))
    return scalar();
  const unsigned blocks = vector_blocks(rows, stride, kVec<T>);
  if (small_index(static_cast<uint64_t>(rows * stride)))
    vec32(blocks);
  else
    vec64(blocks);
}

struct EqBatch {
  BnEqLayer layer[kEqLayersPerLaunch];
};

// blockIdx.y picks the layer. Double steps with _rn: no fused multiply-add,
// as on the CPU.
__global__ void eq_params_kernel(EqBatch batch) {
  const BnEqLayer& l = batch.layer[blockIdx.y];
  for (int64_t k = first_index(); k < l.channels; k += grid_stride()) {
    const double sc = __ddiv_rn(l.gamma[k], __dsqrt_rn(__dadd_rn(l.var[k], l.eps)));
    l.scale[k] = static_cast<float>(sc);
    l.bias[k] = static_cast<float>(__dsub_rn(l.beta[k], __dmul_rn(l.mean[k], sc)));
  }
}

// Grid of the elementwise passes: tiles in y, row blocks in x.
dim3 apply_grid(int64_t rows, int64_t channels) {
  const int64_t tiles = tiles_of(channels);
  int64_t row_blocks = (rows + kLanes - 1) / kLanes;
  const int64_t cap = static_cast<int64_t>(kMaxBlocks) / tiles;
  if (row_blocks > cap) row_blocks = cap;
  if (row_blocks < 1) row_blocks = 1;
  return dim3(static_cast<unsigned>(row_blocks), static_cast<unsigned>(tiles));
}

dim3 slice_grid(int64_t rows, int64_t channels) {
  return dim3(static_cast<unsigned>(slices_of(rows, channels)),
              static_cast<unsigned>(tiles_of(channels)));
}

unsigned channel_blocks(int64_t channels) {
  return blocks_for(static_cast<uint64_t>(channels));
}

bool empty(int64_t rows, int64_t channels) {
  return rows <= 0 || channels <= 0;
}

}  // namespace

uint64_t bn_workspace_bytes(int64_t rows, int64_t channels) {
  if (empty(rows, channels)) return 0;
  const auto c = static_cast<uint64_t>(channels);
  return 2 * static_cast<uint64_t>(slices_of(rows, channels)) * c * sizeof(double) +
         (4 * c + 2 * c + 1) * sizeof(float);
}

cudaError_t launch_bn_train(const BnTrain& b, cudaStream_t stream) {
  if (empty(b.rows, b.channels)) return cudaSuccess;
  const int64_t slices = slices_of(b.rows, b.channels);
  const Workspace w = carve(b.workspace, slices, b.channels);
  const dim3 block(kTile, kLanes);
  dispatch(b.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (b.stride % kVec<T> == 0 && vectorisable<T>(static_cast<uint64_t>(b.rows * b.stride), {b.x}))
      moments_vec_kernel<<<vec_slice_grid<T>(b.rows, b.channels, b.stride),
                           dim3(kVecTile, kVecLanes), 0, stream>>>(
          static_cast<const T*>(b.x), b.rows, b.channels, b.stride, slices, w.a, w.b);
    else
      moments_kernel<<<slice_grid(b.rows, b.channels), block, 0, stream>>>(
          static_cast<const T*>(b.x), b.rows, b.channels, b.stride, slices, w.a, w.b);
    const unsigned cb = channel_blocks(b.channels);
    const auto per_channel = static_cast<unsigned>(b.channels);
    if (b.rank_sum) {
      sync_local_moments_kernel<<<per_channel, kFoldThreads, 0, stream>>>(b, slices, w);
      b.rank_sum.sum(b.rank_sum.context, w.sync, static_cast<uint64_t>(b.channels) + 1, stream);
      sync_deviations_kernel<<<cb, kThreads, 0, stream>>>(b, w);
      b.rank_sum.sum(b.rank_sum.context, w.sync, static_cast<uint64_t>(b.channels), stream);
      sync_stats_kernel<T><<<cb, kThreads, 0, stream>>>(b, w);
    } else {
      train_stats_kernel<T><<<per_channel, kFoldThreads, 0, stream>>>(b, slices, w);
    }
    // Over the stride: the padding lanes are written too.
    launch_elementwise<T>(
        b.rows, b.stride, {b.x, b.y},
        [&](unsigned n) {
          train_apply_vec_kernel<T, uint32_t><<<n, kThreads, 0, stream>>>(b, w.coef);
        },
        [&](unsigned n) {
          train_apply_vec_kernel<T, uint64_t><<<n, kThreads, 0, stream>>>(b, w.coef);
        },
        [&] {
          train_apply_kernel<T><<<apply_grid(b.rows, b.stride), block, 0, stream>>>(b, w.coef);
        });
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_bn_infer(const BnInfer& b, cudaStream_t stream) {
  if (empty(b.rows, b.channels)) return cudaSuccess;
  dispatch(b.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    launch_elementwise<T>(
        b.rows, b.stride, {b.x, b.y},
        [&](unsigned n) { infer_vec_kernel<T, uint32_t><<<n, kThreads, 0, stream>>>(b); },
        [&](unsigned n) { infer_vec_kernel<T, uint64_t><<<n, kThreads, 0, stream>>>(b); },
        [&] {
          infer_kernel<T><<<apply_grid(b.rows, b.stride), dim3(kTile, kLanes), 0, stream>>>(b);
        });
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_bn_backward(const BnBackward& b, cudaStream_t stream) {
  if (empty(b.rows, b.channels) || (!b.dgamma && !b.dbeta && !b.dx)) return cudaSuccess;
  const int64_t slices = slices_of(b.rows, b.channels);
  const Workspace w = carve(b.workspace, slices, b.channels);
  const dim3 block(kTile, kLanes);
  dispatch(b.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    if (b.stride % kVec<T> == 0 &&
        vectorisable<T>(static_cast<uint64_t>(b.rows * b.stride), {b.x, b.dy}))
      grad_sums_vec_kernel<T><<<vec_slice_grid<T>(b.rows, b.channels, b.stride),
                                dim3(kVecTile, kVecLanes), 0, stream>>>(b, slices, w);
    else
      grad_sums_kernel<T><<<slice_grid(b.rows, b.channels), block, 0, stream>>>(b, slices, w);
    grad_finish_kernel<T>
        <<<static_cast<unsigned>(b.channels), kFoldThreads, 0, stream>>>(b, slices, w);
    if (b.dx && b.rank_sum) {
      b.rank_sum.sum(b.rank_sum.context, w.sync, 2 * static_cast<uint64_t>(b.channels) + 1, stream);
      sync_dx_coef_kernel<T><<<channel_blocks(b.channels), kThreads, 0, stream>>>(b, w);
    }
    if (b.dx)
      launch_elementwise<T>(
          b.rows, b.stride, {b.x, b.dy, b.dx},
          [&](unsigned n) { grad_dx_vec_kernel<T, uint32_t><<<n, kThreads, 0, stream>>>(b, w); },
          [&](unsigned n) { grad_dx_vec_kernel<T, uint64_t><<<n, kThreads, 0, stream>>>(b, w); },
          [&] { grad_dx_kernel<T><<<apply_grid(b.rows, b.stride), block, 0, stream>>>(b, w); });
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_bn_eq_params(const BnEqLayer* layers, int count, cudaStream_t stream) {
  for (int first = 0; first < count; first += kEqLayersPerLaunch) {
    EqBatch batch;
    const int n = count - first < kEqLayersPerLaunch ? count - first : kEqLayersPerLaunch;
    int64_t widest = 0;
    for (int i = 0; i < n; ++i) {
      batch.layer[i] = layers[first + i];
      if (layers[first + i].channels > widest) widest = layers[first + i].channels;
    }
    if (widest == 0) continue;
    eq_params_kernel<<<dim3(blocks_for(static_cast<uint64_t>(widest)), static_cast<unsigned>(n)),
                       kThreads, 0, stream>>>(batch);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace tr::cuda

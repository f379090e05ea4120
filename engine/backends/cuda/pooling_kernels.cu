// SPDX-License-Identifier: GPL-3.0-or-later
// Pooling kernels: one thread per output element forward and one per input
// element backward, channels fastest so neighbouring threads touch
// neighbouring values; templated on the storage type (float, __half or
// __nv_bfloat16), the arithmetic in float either way. Where the channel
// stride is whole 16-byte vectors, every kernel moves 16 bytes of channels a
// thread instead (the vectorised forms below).
#include <initializer_list>
#include <type_traits>

#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/pooling_kernels.h"
#include "backends/cuda/vector_io.cuh"

namespace tr::cuda {

namespace {

__device__ inline int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}
__device__ inline int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

// The valid input range [lo, hi) of output position o along one axis.
__device__ inline void window(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size,
                              int64_t& lo, int64_t& hi) {
  const int64_t start = o * stride - pad;
  lo = max64(start, 0);
  hi = min64(start + k, size);
}

// The outputs [lo, hi) along one axis whose windows contain input i.
__device__ inline void covering(int64_t i, int64_t stride, int64_t pad, int64_t k, int64_t outs,
                                int64_t& lo, int64_t& hi) {
  const int64_t last = i + pad;  // o * stride <= last and o * stride > last - k
  const int64_t first = last - k + 1;
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = min64(last / stride + 1, outs);
}

// count_include_pad: the window clipped to the padded input, as the CPU's.
__device__ inline int64_t divisor(const PoolGeometry& g, int64_t yo, int64_t xo) {
  const int64_t hs = yo * g.sh - g.ph, ws = xo * g.sw - g.pw;
  return (min64(hs + g.kh, g.h + g.ph) - hs) * (min64(ws + g.kw, g.w + g.pw) - ws);
}

// Position i of an NHWC tensor of w columns and h rows, channels c apart:
// its channel, column, row and image.
struct NhwcIndex {
  int64_t k, col, row, b;
};
__device__ inline NhwcIndex nhwc_index(uint64_t i, int64_t c, int64_t w, int64_t h) {
  const int64_t p = static_cast<int64_t>(i / c);
  return {static_cast<int64_t>(i % c), p % w, (p / w) % h, p / (w * h)};
}

// Window rows [r0, r1) and columns [c0, c1) of output (yo, xo), clipped.
__device__ inline void output_window(const PoolGeometry& g, int64_t yo, int64_t xo, int64_t& r0,
                                     int64_t& r1, int64_t& c0, int64_t& c1) {
  window(yo, g.sh, g.ph, g.kh, g.h, r0, r1);
  window(xo, g.sw, g.pw, g.kw, g.w, c0, c1);
}

// Strictly greater keeps the first maximum; a NaN wins and stays.
__device__ inline float max_step(float best, float v) {
  return (v > best || v != v) ? v : best;
}

// The maximum of channel k of image b over input rows [r0, r1) and columns
// [c0, c1). Padding is -inf: it never wins, so it is not visited.
template <class T>
__device__ inline float window_max(const PoolGeometry& g, const T* x, int64_t b, int64_t k,
                                   int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  float best = -__int_as_float(0x7f800000);
  for (int64_t yi = r0; yi < r1; ++yi)
    for (int64_t xi = c0; xi < c1; ++xi)
      best = max_step(best, load(x, ((b * g.h + yi) * g.w + xi) * g.cs + k));
  return best;
}

template <class T>
__global__ void maxpool_fwd_kernel(PoolGeometry g, const T* x, T* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.oh * g.ow * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex o = nhwc_index(i, g.cs, g.ow, g.oh);
    const int64_t k = o.k, xo = o.col, yo = o.row, b = o.b;
    if (k >= g.c) {
      store(y, i, 0.0f);
      continue;
    }
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    store(y, i, window_max(g, x, b, k, r0, r1, c0, c1));
  }
}

// MAXPOOL_FWD_WHERE: the maximum, and the position of the window's first
// element equal to it (what maxpool_bwd_kernel routes to); -1 for a NaN.
template <class T>
__global__ void maxpool_fwd_where_kernel(PoolGeometry g, const T* x, T* y, int8_t* where,
                                         int64_t ws) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.oh * g.ow * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex o = nhwc_index(i, g.cs, g.ow, g.oh);
    const int64_t k = o.k, xo = o.col, yo = o.row, b = o.b;
    const int64_t pixel = (b * g.oh + yo) * g.ow + xo;
    if (k >= g.c) {
      store(y, i, 0.0f);
      if (k < ws) where[pixel * ws + k] = 0;
      continue;
    }
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    store(y, i, window_max(g, x, b, k, r0, r1, c0, c1));
    const float m = load(y, i);
    const int64_t top = yo * g.sh - g.ph, left = xo * g.sw - g.pw;
    int at = -1;
    for (int64_t yi = r0; yi < r1 && at < 0; ++yi)
      for (int64_t xi = c0; xi < c1; ++xi)
        if (load(x, ((b * g.h + yi) * g.w + xi) * g.cs + k) == m) {
          at = static_cast<int>((yi - top) * g.kw + (xi - left));
          break;
        }
    where[pixel * ws + k] = static_cast<int8_t>(at);
  }
}

// Whether input (yi, xi) is the first element of window (yo, xo) equal to its
// maximum m, scanning row-major as the CPU routes.
template <class T>
__device__ inline bool first_max_at(const PoolGeometry& g, const T* xc, int64_t yo, int64_t xo,
                                    float m, int64_t yi, int64_t xi) {
  int64_t r0, r1, c0, c1;
  window(yo, g.sh, g.ph, g.kh, g.h, r0, r1);
  window(xo, g.sw, g.pw, g.kw, g.w, c0, c1);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      if (load(xc, (r * g.w + c) * g.cs) == m) return r == yi && c == xi;
  return false;
}

// dx[i] (+)= the gradient of every window covering input element i that
// routes to it (hit(b, k, yi, xi, yo, xo, o), o the window's dy index),
// added in the CPU's window order. Starting from 0 and adding every covering
// window's share, a zero included, gives the CPU's bits (its clear, then
// adds; -0 becomes +0).
template <class T, class Hit>
__device__ inline void gather_routed(const PoolGeometry& g, uint64_t i, const T* dy, T* dx,
                                     bool accumulate, Hit hit) {
  const NhwcIndex at = nhwc_index(i, g.cs, g.w, g.h);
  const int64_t k = at.k, xi = at.col, yi = at.row, b = at.b;
  if (k >= g.c) {
    store(dx, i, 0.0f);
    return;
  }
  float acc = accumulate ? load(dx, i) : 0.0f;
  int64_t y0, y1, x0, x1;
  covering(yi, g.sh, g.ph, g.kh, g.oh, y0, y1);
  covering(xi, g.sw, g.pw, g.kw, g.ow, x0, x1);
  for (int64_t yo = y0; yo < y1; ++yo)
    for (int64_t xo = x0; xo < x1; ++xo) {
      const int64_t o = ((b * g.oh + yo) * g.ow + xo) * g.cs + k;
      acc += hit(b, k, yi, xi, yo, xo, o) ? load(dy, o) : 0.0f;
    }
  store(dx, i, acc);
}

template <class T>
__global__ void maxpool_bwd_kernel(PoolGeometry g, const T* x, const T* y, const T* dy, T* dx,
                                   bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const float xv = load(x, i);
    gather_routed(
        g, i, dy, dx, accumulate,
        [&](int64_t b, int64_t k, int64_t yi, int64_t xi, int64_t yo, int64_t xo, int64_t o) {
          const float m = load(y, o);
          // A NaN input equals no maximum, so it adds zeros, as on the CPU.
          return xv == m && first_max_at(g, x + b * g.h * g.w * g.cs + k, yo, xo, m, yi, xi);
        });
  }
}

// MAXPOOL_BWD_WHERE: maxpool_bwd_kernel's sums, each window's hit read from
// `where` (channels `ws` apart) instead of found again in x.
template <class T>
__global__ void maxpool_bwd_where_kernel(PoolGeometry g, const int8_t* where, int64_t ws,
                                         const T* dy, T* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride())
    gather_routed(
        g, i, dy, dx, accumulate,
        [&](int64_t, int64_t k, int64_t yi, int64_t xi, int64_t yo, int64_t xo, int64_t o) {
          const int64_t pos = (yi - (yo * g.sh - g.ph)) * g.kw + (xi - (xo * g.sw - g.pw));
          return where[o / g.cs * ws + k] == pos;
        });
}

// ---------------------------------------------------------------------------
// Pooling, vectorised: a thread takes 16 bytes of channels of one pixel
// (vector_io.cuh), so the pixel's index arithmetic is done once for 8 FP16 or
// BF16 channels (4 FP32), in 32-bit where the tensor allows. Each lane runs
// the scalar kernel's steps in the same order, so the bits are the same.

// Vector i of an NHWC tensor of w columns and h rows with `groups` vectors
// a pixel: its pixel, first channel, column, row and image.
template <class I>
struct VecPixel {
  I p, k0, col, row, b;
};
template <class T, class I>
__device__ inline VecPixel<I> vec_pixel(I i, I groups, int64_t w, int64_t h) {
  VecPixel<I> v;
  v.p = i / groups;
  v.k0 = (i - v.p * groups) * kVec<T>;
  const I q = v.p / static_cast<I>(w);
  v.col = v.p - q * static_cast<I>(w);
  v.row = q % static_cast<I>(h);
  v.b = q / static_cast<I>(h);
  return v;
}

// Per-lane window reductions of the vectorised forward kernels, each the
// scalar kernel's steps: max pooling's first maximum, average pooling's sum
// times the reciprocal of the clipped window.
struct MaxWindow {
  __device__ static float start() { return -__int_as_float(0x7f800000); }
  __device__ static float step(float acc, float v) { return max_step(acc, v); }
  __device__ static float finish(float acc, const PoolGeometry&, int64_t, int64_t) { return acc; }
};
struct AvgWindow {
  __device__ static float start() { return 0.0f; }
  __device__ static float step(float acc, float v) { return acc + v; }
  __device__ static float finish(float acc, const PoolGeometry& g, int64_t yo, int64_t xo) {
    return acc * (1.0f / static_cast<float>(divisor(g, yo, xo)));
  }
};

// acc's lanes into the vector at `at`; lanes past the c channels are padding.
template <class T, int N>
__device__ inline void store_lanes(T* p, uint64_t at, int64_t k0, int64_t c, const float* acc) {
  Vec<T> out;
#pragma unroll
  for (int k = 0; k < N; ++k) store(out.v, k, k0 + k < c ? acc[k] : 0.0f);
  store_vec(p, at, out);
}

// The lanes of the vector at `at` as floats, or zeros when not accumulating.
template <class T, int N>
__device__ inline void start_lanes(const T* p, uint64_t at, bool accumulate, float* acc) {
  if (accumulate) {
    const Vec<T> d = load_vec(p, at);
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = load(d.v, k);
  } else {
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = 0.0f;
  }
}

template <class R, class T, class I>
__global__ void pool_fwd_vec_kernel(PoolGeometry g, const T* x, T* y) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(g.cs / N);
  const I total = static_cast<I>(g.n * g.oh * g.ow) * groups;
  for (I i = static_cast<I>(first_index()); i < total; i += static_cast<I>(grid_stride())) {
    const VecPixel<I> o = vec_pixel<T>(i, groups, g.ow, g.oh);
    const auto yo = static_cast<int64_t>(o.row), xo = static_cast<int64_t>(o.col);
    const auto b = static_cast<int64_t>(o.b), k0 = static_cast<int64_t>(o.k0);
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    float acc[N];
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = R::start();
    for (int64_t yi = r0; yi < r1; ++yi)
      for (int64_t xi = c0; xi < c1; ++xi) {
        const Vec<T> v = load_vec(x, ((b * g.h + yi) * g.w + xi) * g.cs + k0);
#pragma unroll
        for (int k = 0; k < N; ++k) acc[k] = R::step(acc[k], load(v.v, k));
      }
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = R::finish(acc[k], g, yo, xo);
    store_lanes<T, N>(y, static_cast<uint64_t>(o.p) * g.cs + k0, k0, g.c, acc);
  }
}

template <class T, class I>
__global__ void maxpool_bwd_vec_kernel(PoolGeometry g, const T* x, const T* y, const T* dy, T* dx,
                                       bool accumulate) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(g.cs / N);
  const I total = static_cast<I>(g.n * g.h * g.w) * groups;
  for (I i = static_cast<I>(first_index()); i < total; i += static_cast<I>(grid_stride())) {
    const VecPixel<I> in = vec_pixel<T>(i, groups, g.w, g.h);
    const I p = in.p, k0 = in.k0, xi = in.col, yi = in.row, b = in.b;
    const uint64_t at = static_cast<uint64_t>(p) * g.cs + k0;
    const Vec<T> xv = load_vec(x, at);
    float acc[N];
    start_lanes<T, N>(dx, at, accumulate, acc);
    int64_t y0, y1, x0, x1;
    covering(static_cast<int64_t>(yi), g.sh, g.ph, g.kh, g.oh, y0, y1);
    covering(static_cast<int64_t>(xi), g.sw, g.pw, g.kw, g.ow, x0, x1);
    const auto bi = static_cast<int64_t>(b);
    for (int64_t yo = y0; yo < y1; ++yo)
      for (int64_t xo = x0; xo < x1; ++xo) {
        const uint64_t o = ((bi * g.oh + yo) * g.ow + xo) * g.cs + static_cast<int64_t>(k0);
        const Vec<T> m = load_vec(y, o), d = load_vec(dy, o);
        // Per lane, whether this input is the window's first element equal
        // to its maximum (first_max_at, all lanes in one scan).
        bool found[N], hit[N];
#pragma unroll
        for (int k = 0; k < N; ++k) found[k] = hit[k] = false;
        int64_t r0, r1, c0, c1;
        output_window(g, yo, xo, r0, r1, c0, c1);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) {
            const Vec<T> wv =
                load_vec(x, ((bi * g.h + r) * g.w + c) * g.cs + static_cast<int64_t>(k0));
#pragma unroll
            for (int k = 0; k < N; ++k)
              if (!found[k] && load(wv.v, k) == load(m.v, k)) {
                found[k] = true;
                hit[k] = r == static_cast<int64_t>(yi) && c == static_cast<int64_t>(xi);
              }
          }
#pragma unroll
        for (int k = 0; k < N; ++k)
          // A NaN input equals no maximum, so it adds zeros, as on the CPU.
          acc[k] += load(xv.v, k) == load(m.v, k) && hit[k] ? load(d.v, k) : 0.0f;
      }
    store_lanes<T, N>(dx, at, static_cast<int64_t>(k0), g.c, acc);
  }
}

template <class T, class I>
__global__ void avgpool_bwd_vec_kernel(PoolGeometry g, const T* dy, T* dx, bool accumulate) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(g.cs / N);
  const I total = static_cast<I>(g.n * g.h * g.w) * groups;
  for (I i = static_cast<I>(first_index()); i < total; i += static_cast<I>(grid_stride())) {
    const VecPixel<I> in = vec_pixel<T>(i, groups, g.w, g.h);
    const auto b = static_cast<int64_t>(in.b), k0 = static_cast<int64_t>(in.k0);
    const uint64_t at = static_cast<uint64_t>(in.p) * g.cs + k0;
    float acc[N];
    start_lanes<T, N>(dx, at, accumulate, acc);
    int64_t y0, y1, x0, x1;
    covering(static_cast<int64_t>(in.row), g.sh, g.ph, g.kh, g.oh, y0, y1);
    covering(static_cast<int64_t>(in.col), g.sw, g.pw, g.kw, g.ow, x0, x1);
    for (int64_t yo = y0; yo < y1; ++yo)
      for (int64_t xo = x0; xo < x1; ++xo) {
        const float inv = 1.0f / static_cast<float>(divisor(g, yo, xo));
        const Vec<T> d = load_vec(dy, ((b * g.oh + yo) * g.ow + xo) * g.cs + k0);
        // Rounded product, then the add, as the scalar kernel.
#pragma unroll
        for (int k = 0; k < N; ++k) acc[k] += __fmul_rn(load(d.v, k), inv);
      }
    store_lanes<T, N>(dx, at, k0, g.c, acc);
  }
}

// Global average pooling, a thread per 16 bytes of one image's channels
// forward and of one pixel's backward.
template <class T, class I>
__global__ void gap_fwd_vec_kernel(PoolGeometry g, const T* x, T* y) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(g.cs / N);
  const I total = static_cast<I>(g.n) * groups;
  const int64_t hw = g.h * g.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (I i = static_cast<I>(first_index()); i < total; i += static_cast<I>(grid_stride())) {
    const I b = i / groups;
    const auto k0 = static_cast<int64_t>((i - b * groups) * N);
    float acc[N];
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = 0.0f;
    for (int64_t p = 0; p < hw; ++p) {
      const Vec<T> v = load_vec(x, (static_cast<int64_t>(b) * hw + p) * g.cs + k0);
#pragma unroll
      for (int k = 0; k < N; ++k) acc[k] += load(v.v, k);
    }
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = acc[k] * inv;
    store_lanes<T, N>(y, static_cast<uint64_t>(i) * N, k0, g.c, acc);
  }
}

template <class T, class I>
__global__ void gap_bwd_vec_kernel(PoolGeometry g, const T* dy, T* dx, bool accumulate) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(g.cs / N);
  const I total = static_cast<I>(g.n * g.h * g.w) * groups;
  const I hw = static_cast<I>(g.h * g.w);
  const float inv = 1.0f / static_cast<float>(g.h * g.w);
  for (I i = static_cast<I>(first_index()); i < total; i += static_cast<I>(grid_stride())) {
    const I p = i / groups;
    const auto k0 = static_cast<int64_t>((i - p * groups) * N);
    const uint64_t at = static_cast<uint64_t>(i) * N;
    const Vec<T> d = load_vec(dy, static_cast<uint64_t>(p / hw) * g.cs + k0);
    float acc[N];
    start_lanes<T, N>(dx, at, accumulate, acc);
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const float v = __fmul_rn(load(d.v, k), inv);
      acc[k] = accumulate ? acc[k] + v : v;
    }
    store_lanes<T, N>(dx, at, k0, g.c, acc);
  }
}

template <class T>
__global__ void avgpool_fwd_kernel(PoolGeometry g, const T* x, T* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.oh * g.ow * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex o = nhwc_index(i, g.cs, g.ow, g.oh);
    const int64_t k = o.k, xo = o.col, yo = o.row, b = o.b;
    if (k >= g.c) {
      store(y, i, 0.0f);
      continue;
    }
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    float sum = 0.0f;
    for (int64_t yi = r0; yi < r1; ++yi)
      for (int64_t xi = c0; xi < c1; ++xi) sum += load(x, ((b * g.h + yi) * g.w + xi) * g.cs + k);
    store(y, i, sum * (1.0f / static_cast<float>(divisor(g, yo, xo))));
  }
}

template <class T>
__global__ void avgpool_bwd_kernel(PoolGeometry g, const T* dy, T* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.cs);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex at = nhwc_index(i, g.cs, g.w, g.h);
    const int64_t k = at.k, xi = at.col, yi = at.row, b = at.b;
    if (k >= g.c) {
      store(dx, i, 0.0f);
      continue;
    }
    int64_t y0, y1, x0, x1;
    covering(yi, g.sh, g.ph, g.kh, g.oh, y0, y1);
    covering(xi, g.sw, g.pw, g.kw, g.ow, x0, x1);
    float acc = accumulate ? load(dx, i) : 0.0f;
    for (int64_t yo = y0; yo < y1; ++yo)
      for (int64_t xo = x0; xo < x1; ++xo) {
        const float inv = 1.0f / static_cast<float>(divisor(g, yo, xo));
        // Rounded product, then the add: the CPU does not fuse them.
        acc += __fmul_rn(load(dy, ((b * g.oh + yo) * g.ow + xo) * g.cs + k), inv);
      }
    store(dx, i, acc);
  }
}

template <class T>
__global__ void gap_fwd_kernel(PoolGeometry g, const T* x, T* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.cs);
  const int64_t hw = g.h * g.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t k = static_cast<int64_t>(i % g.cs), b = static_cast<int64_t>(i / g.cs);
    float sum = 0.0f;
    if (k < g.c)
      for (int64_t p = 0; p < hw; ++p) sum += load(x, (b * hw + p) * g.cs + k);
    store(y, i, sum * inv);
  }
}

template <class T>
__global__ void gap_bwd_kernel(PoolGeometry g, const T* dy, T* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.cs);
  const int64_t hw = g.h * g.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t k = static_cast<int64_t>(i % g.cs);
    if (k >= g.c) {
      store(dx, i, 0.0f);
      continue;
    }
    const int64_t b = static_cast<int64_t>(i / g.cs) / hw;
    const float d = __fmul_rn(load(dy, b * g.cs + k), inv);
    store(dx, i, accumulate ? load(dx, i) + d : d);
  }
}

uint64_t inputs(const PoolGeometry& g) {
  return static_cast<uint64_t>(g.n * g.h * g.w * g.cs);
}
uint64_t outputs(const PoolGeometry& g) {
  return static_cast<uint64_t>(g.n * g.oh * g.ow * g.cs);
}

// Runs launch(T*) with the storage type g.elem names.
template <class Launch>
cudaError_t typed(const PoolGeometry& g, uint64_t n, Launch&& launch) {
  if (n) dispatch(g.elem, launch);
  return cudaGetLastError();
}

// Whether `count` elements at each of `data` can go 16 bytes a thread: the
// channel stride whole vectors and every operand on 16 bytes.
template <class T>
bool vectors_fit(const PoolGeometry& g, uint64_t count, std::initializer_list<const void*> data) {
  return g.cs % kVec<T> == 0 && vectorisable<T>(count, data);
}

// Runs launch(I{}) with I = uint32_t when every input and output index fits.
template <class Launch>
void indexed(const PoolGeometry& g, Launch&& launch) {
  if (small_index(inputs(g)) && small_index(outputs(g)))
    launch(uint32_t{});
  else
    launch(uint64_t{});
}

template <class R>
cudaError_t pool_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream) {
  return typed(g, outputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* xp = static_cast<const T*>(x);
    auto* yp = static_cast<T*>(y);
    if (vectors_fit<T>(g, outputs(g), {x, y})) {
      indexed(g, [&](auto index) {
        pool_fwd_vec_kernel<R, T, decltype(index)>
            <<<blocks_for(outputs(g) / kVec<T>), kThreads, 0, stream>>>(g, xp, yp);
      });
    } else if constexpr (std::is_same_v<R, MaxWindow>) {
      maxpool_fwd_kernel<<<blocks_for(outputs(g)), kThreads, 0, stream>>>(g, xp, yp);
    } else {
      avgpool_fwd_kernel<<<blocks_for(outputs(g)), kThreads, 0, stream>>>(g, xp, yp);
    }
    return 0;
  });
}

}  // namespace

cudaError_t launch_maxpool_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream) {
  return pool_fwd<MaxWindow>(g, x, y, stream);
}

cudaError_t launch_maxpool_bwd(const PoolGeometry& g, const void* x, const void* y, const void* dy,
                               void* dx, bool accumulate, cudaStream_t stream) {
  return typed(g, inputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* xp = static_cast<const T*>(x);
    const auto* yp = static_cast<const T*>(y);
    const auto* dyp = static_cast<const T*>(dy);
    auto* dxp = static_cast<T*>(dx);
    if (vectors_fit<T>(g, inputs(g), {x, y, dy, dx})) {
      indexed(g, [&](auto index) {
        maxpool_bwd_vec_kernel<T, decltype(index)>
            <<<blocks_for(inputs(g) / kVec<T>), kThreads, 0, stream>>>(g, xp, yp, dyp, dxp,
                                                                       accumulate);
      });
    } else {
      maxpool_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, xp, yp, dyp, dxp,
                                                                         accumulate);
    }
    return 0;
  });
}

cudaError_t launch_maxpool_fwd_where(const PoolGeometry& g, const void* x, void* y, int8_t* where,
                                     int64_t ws, cudaStream_t stream) {
  return typed(g, outputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    maxpool_fwd_where_kernel<<<blocks_for(outputs(g)), kThreads, 0, stream>>>(
        g, static_cast<const T*>(x), static_cast<T*>(y), where, ws);
    return 0;
  });
}

cudaError_t launch_maxpool_bwd_where(const PoolGeometry& g, const int8_t* where, int64_t ws,
                                     const void* dy, void* dx, bool accumulate,
                                     cudaStream_t stream) {
  return typed(g, inputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    maxpool_bwd_where_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(
        g, where, ws, static_cast<const T*>(dy), static_cast<T*>(dx), accumulate);
    return 0;
  });
}

cudaError_t launch_avgpool_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream) {
  return pool_fwd<AvgWindow>(g, x, y, stream);
}

cudaError_t launch_avgpool_bwd(const PoolGeometry& g, const void* dy, void* dx, bool accumulate,
                               cudaStream_t stream) {
  return typed(g, inputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* dyp = static_cast<const T*>(dy);
    auto* dxp = static_cast<T*>(dx);
    if (vectors_fit<T>(g, inputs(g), {dy, dx})) {
      indexed(g, [&](auto index) {
        avgpool_bwd_vec_kernel<T, decltype(index)>
            <<<blocks_for(inputs(g) / kVec<T>), kThreads, 0, stream>>>(g, dyp, dxp, accumulate);
      });
    } else {
      avgpool_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, dyp, dxp, accumulate);
    }
    return 0;
  });
}

cudaError_t launch_gap_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.cs);
  return typed(g, n, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* xp = static_cast<const T*>(x);
    auto* yp = static_cast<T*>(y);
    if (vectors_fit<T>(g, n, {x, y})) {
      indexed(g, [&](auto index) {
        gap_fwd_vec_kernel<T, decltype(index)>
            <<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(g, xp, yp);
      });
    } else {
      gap_fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, xp, yp);
    }
    return 0;
  });
}

cudaError_t launch_gap_bwd(const PoolGeometry& g, const void* dy, void* dx, bool accumulate,
                           cudaStream_t stream) {
  return typed(g, inputs(g), [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* dyp = static_cast<const T*>(dy);
    auto* dxp = static_cast<T*>(dx);
    if (vectors_fit<T>(g, inputs(g), {dy, dx})) {
      indexed(g, [&](auto index) {
        gap_bwd_vec_kernel<T, decltype(index)>
            <<<blocks_for(inputs(g) / kVec<T>), kThreads, 0, stream>>>(g, dyp, dxp, accumulate);
      });
    } else {
      gap_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, dyp, dxp, accumulate);
    }
    return 0;
  });
}

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// Pooling kernels: one thread per output element forward and one per input
// element backward, channels fastest so neighbouring threads touch
// neighbouring floats.
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/pooling_kernels.h"

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

// Element i of an NHWC tensor of w columns and h rows with g.c channels:
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

__global__ void maxpool_fwd_kernel(PoolGeometry g, const float* x, float* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.oh * g.ow * g.c);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex o = nhwc_index(i, g.c, g.ow, g.oh);
    const int64_t k = o.k, xo = o.col, yo = o.row, b = o.b;
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    // Padding is -inf: it never wins, so it is not visited.
    float best = -__int_as_float(0x7f800000);
    for (int64_t yi = r0; yi < r1; ++yi)
      for (int64_t xi = c0; xi < c1; ++xi)
        best = max_step(best, x[((b * g.h + yi) * g.w + xi) * g.c + k]);
    y[i] = best;
  }
}

// Whether input (yi, xi) is the first element of window (yo, xo) equal to its
// maximum m, scanning row-major as the CPU routes.
__device__ inline bool first_max_at(const PoolGeometry& g, const float* xc, int64_t yo, int64_t xo,
                                    float m, int64_t yi, int64_t xi) {
  int64_t r0, r1, c0, c1;
  window(yo, g.sh, g.ph, g.kh, g.h, r0, r1);
  window(xo, g.sw, g.pw, g.kw, g.w, c0, c1);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      if (xc[(r * g.w + c) * g.c] == m) return r == yi && c == xi;
  return false;
}

__global__ void maxpool_bwd_kernel(PoolGeometry g, const float* x, const float* y, const float* dy,
                                   float* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.c);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex at = nhwc_index(i, g.c, g.w, g.h);
    const int64_t k = at.k, xi = at.col, yi = at.row, b = at.b;
    // Starting from 0 and adding every covering window's share, a zero
    // included, gives the CPU's bits (its clear, then adds; -0 becomes +0).
    float acc = accumulate ? dx[i] : 0.0f;
    const float* xc = x + b * g.h * g.w * g.c + k;
    int64_t y0, y1, x0, x1;
    covering(yi, g.sh, g.ph, g.kh, g.oh, y0, y1);
    covering(xi, g.sw, g.pw, g.kw, g.ow, x0, x1);
    for (int64_t yo = y0; yo < y1; ++yo)
      for (int64_t xo = x0; xo < x1; ++xo) {
        const int64_t o = ((b * g.oh + yo) * g.ow + xo) * g.c + k;
        const float m = y[o];
        // A NaN input equals no maximum, so it adds zeros, as on the CPU.
        const bool hit = x[i] == m && first_max_at(g, xc, yo, xo, m, yi, xi);
        acc += hit ? dy[o] : 0.0f;
      }
    dx[i] = acc;
  }
}

__global__ void avgpool_fwd_kernel(PoolGeometry g, const float* x, float* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.oh * g.ow * g.c);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex o = nhwc_index(i, g.c, g.ow, g.oh);
    const int64_t k = o.k, xo = o.col, yo = o.row, b = o.b;
    int64_t r0, r1, c0, c1;
    output_window(g, yo, xo, r0, r1, c0, c1);
    float sum = 0.0f;
    for (int64_t yi = r0; yi < r1; ++yi)
      for (int64_t xi = c0; xi < c1; ++xi) sum += x[((b * g.h + yi) * g.w + xi) * g.c + k];
    y[i] = sum * (1.0f / static_cast<float>(divisor(g, yo, xo)));
  }
}

__global__ void avgpool_bwd_kernel(PoolGeometry g, const float* dy, float* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.c);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const NhwcIndex at = nhwc_index(i, g.c, g.w, g.h);
    const int64_t k = at.k, xi = at.col, yi = at.row, b = at.b;
    int64_t y0, y1, x0, x1;
    covering(yi, g.sh, g.ph, g.kh, g.oh, y0, y1);
    covering(xi, g.sw, g.pw, g.kw, g.ow, x0, x1);
    float acc = accumulate ? dx[i] : 0.0f;
    for (int64_t yo = y0; yo < y1; ++yo)
      for (int64_t xo = x0; xo < x1; ++xo) {
        const float inv = 1.0f / static_cast<float>(divisor(g, yo, xo));
        // Rounded product, then the add: the CPU does not fuse them.
        acc += __fmul_rn(dy[((b * g.oh + yo) * g.ow + xo) * g.c + k], inv);
      }
    dx[i] = acc;
  }
}

__global__ void gap_fwd_kernel(PoolGeometry g, const float* x, float* y) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.c);
  const int64_t hw = g.h * g.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t k = static_cast<int64_t>(i % g.c), b = static_cast<int64_t>(i / g.c);
    float sum = 0.0f;
    for (int64_t p = 0; p < hw; ++p) sum += x[(b * hw + p) * g.c + k];
    y[i] = sum * inv;
  }
}

__global__ void gap_bwd_kernel(PoolGeometry g, const float* dy, float* dx, bool accumulate) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.h * g.w * g.c);
  const int64_t hw = g.h * g.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const int64_t k = static_cast<int64_t>(i % g.c);
    const int64_t b = static_cast<int64_t>(i / g.c) / hw;
    const float d = __fmul_rn(dy[b * g.c + k], inv);
    dx[i] = accumulate ? dx[i] + d : d;
  }
}

uint64_t inputs(const PoolGeometry& g) {
  return static_cast<uint64_t>(g.n * g.h * g.w * g.c);
}
uint64_t outputs(const PoolGeometry& g) {
  return static_cast<uint64_t>(g.n * g.oh * g.ow * g.c);
}

}  // namespace

cudaError_t launch_maxpool_fwd(const PoolGeometry& g, const float* x, float* y,
                               cudaStream_t stream) {
  if (outputs(g)) maxpool_fwd_kernel<<<blocks_for(outputs(g)), kThreads, 0, stream>>>(g, x, y);
  return cudaGetLastError();
}

cudaError_t launch_maxpool_bwd(const PoolGeometry& g, const float* x, const float* y,
                               const float* dy, float* dx, bool accumulate, cudaStream_t stream) {
  if (inputs(g))
    maxpool_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, x, y, dy, dx, accumulate);
  return cudaGetLastError();
}

cudaError_t launch_avgpool_fwd(const PoolGeometry& g, const float* x, float* y,
                               cudaStream_t stream) {
  if (outputs(g)) avgpool_fwd_kernel<<<blocks_for(outputs(g)), kThreads, 0, stream>>>(g, x, y);
  return cudaGetLastError();
}

cudaError_t launch_avgpool_bwd(const PoolGeometry& g, const float* dy, float* dx, bool accumulate,
                               cudaStream_t stream) {
  if (inputs(g))
    avgpool_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, dy, dx, accumulate);
  return cudaGetLastError();
}

cudaError_t launch_gap_fwd(const PoolGeometry& g, const float* x, float* y, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(g.n * g.c);
  if (n) gap_fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, x, y);
  return cudaGetLastError();
}

cudaError_t launch_gap_bwd(const PoolGeometry& g, const float* dy, float* dx, bool accumulate,
                           cudaStream_t stream) {
  if (inputs(g))
    gap_bwd_kernel<<<blocks_for(inputs(g)), kThreads, 0, stream>>>(g, dy, dx, accumulate);
  return cudaGetLastError();
}

}  // namespace tr::cuda

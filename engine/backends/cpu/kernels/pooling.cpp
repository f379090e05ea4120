// SPDX-License-Identifier: GPL-3.0-or-later
// CPU pooling (NHWC FP32), matching torch MaxPool2d and AvgPool2d(count_include_pad=True).
#include "backends/cpu/kernels/pooling.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace tr::cpu {

using detail::has_out;
using detail::kChannelBlock;
using detail::layer_params;

namespace {

// The geometry of one pooling node: every loop below walks output positions
// and, inside, the valid part of the window, with channels innermost so the
// work per window position is one contiguous vector loop.
struct Window {
  int64_t n, h, w, c;  // input
  int64_t oh, ow;      // output
  int64_t kh, kw, sh, sw, ph, pw;

  Window(const Shape& in, const Shape& out, const LayerParams& p)
      : n(in.n),
        h(in.h),
        w(in.w),
        c(in.c),
        oh(out.h),
        ow(out.w),
        kh(p.kernel_h),
        kw(p.kernel_w),
        sh(p.stride_h),
        sw(p.stride_w),
        ph(p.pad_h),
        pw(p.pad_w) {}

  // Valid input rows [lo, hi) of output row `o` (and the same for columns).
  void rows(int64_t o, int64_t& lo, int64_t& hi) const {
    const int64_t start = o * sh - ph;
    lo = std::max<int64_t>(start, 0);
    hi = std::min(start + kh, h);
  }
  void cols(int64_t o, int64_t& lo, int64_t& hi) const {
    const int64_t start = o * sw - pw;
    lo = std::max<int64_t>(start, 0);
    hi = std::min(start + kw, w);
  }
  // PyTorch's count_include_pad divisor: the window clipped to the padded
  // input (the whole kernel unless the window hangs past the padding).
  int64_t divisor(int64_t yo, int64_t xo) const {
    const int64_t hs = yo * sh - ph, ws = xo * sw - pw;
    return (std::min(hs + kh, h + ph) - hs) * (std::min(ws + kw, w + pw) - ws);
  }
  const float* in_at(const float* base, int64_t b, int64_t y, int64_t x) const {
    return base + ((b * h + y) * w + x) * c;
  }
  float* in_at(float* base, int64_t b, int64_t y, int64_t x) const {
    return base + ((b * h + y) * w + x) * c;
  }
  int64_t out_index(int64_t b, int64_t y, int64_t x) const { return ((b * oh + y) * ow + x) * c; }
};

void clear_unless(bool accumulate, float* p, int64_t n) {
  if (!accumulate) std::memset(p, 0, static_cast<size_t>(n) * sizeof(float));
}

}  // namespace

void maxpool_fwd(const KernelArgs& a) {
  const Window g(a.in[0].shape(), a.out[0].shape(), layer_params(a));
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t yo = 0; yo < g.oh; ++yo)
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        float* out = y + g.out_index(b, yo, xo);
        // Padding is -inf: it never wins, so it is simply not visited.
        std::fill(out, out + g.c, -std::numeric_limits<float>::infinity());
        int64_t r0, r1, c0, c1;
        g.rows(yo, r0, r1);
        g.cols(xo, c0, c1);
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const float* in = g.in_at(x, b, yi, xi);
            // Strictly greater keeps the first maximum in row-major order;
            // a NaN wins and stays, as in PyTorch, so the NaN check sees it.
            for (int64_t k = 0; k < g.c; ++k)
              out[k] = (in[k] > out[k] || in[k] != in[k]) ? in[k] : out[k];
          }
      }
}

void maxpool_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const Window g(a.in[0].shape(), a.in[1].shape(), layer_params(a));
  const float* x = a.in[0].f32();
  const float* y = a.in[1].f32();
  const float* dy = a.in[2].f32();
  float* dx = a.out[0].f32();
  // Windows may overlap, so every window adds into dx.
  clear_unless(a.accumulate(0), dx, a.out[0].shape().elements());
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t yo = 0; yo < g.oh; ++yo)
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        const int64_t o = g.out_index(b, yo, xo);
        int64_t r0, r1, c0, c1;
        g.rows(yo, r0, r1);
        g.cols(xo, c0, c1);
        for (int64_t k0 = 0; k0 < g.c; k0 += kChannelBlock) {
          const int64_t cb = std::min(kChannelBlock, g.c - k0);
          // 1 until a channel has routed its gradient to its first maximum.
          float open[kChannelBlock];
          std::fill(open, open + cb, 1.0f);
          const float* ym = y + o + k0;
          const float* gm = dy + o + k0;
          for (int64_t yi = r0; yi < r1; ++yi)
            for (int64_t xi = c0; xi < c1; ++xi) {
              const float* in = g.in_at(x, b, yi, xi) + k0;
              float* out = g.in_at(dx, b, yi, xi) + k0;
              // Selects instead of branches, so the channel loop vectorises.
              for (int64_t k = 0; k < cb; ++k) {
                const float hit = select(in[k] == ym[k], open[k], 0.0f);
                out[k] += select(hit != 0.0f, gm[k], 0.0f);
                open[k] -= hit;
              }
            }
        }
      }
}

void avgpool_fwd(const KernelArgs& a) {
  const Window g(a.in[0].shape(), a.out[0].shape(), layer_params(a));
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t yo = 0; yo < g.oh; ++yo)
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        float* out = y + g.out_index(b, yo, xo);
        std::fill(out, out + g.c, 0.0f);
        int64_t r0, r1, c0, c1;
        g.rows(yo, r0, r1);
        g.cols(xo, c0, c1);
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const float* in = g.in_at(x, b, yi, xi);
            for (int64_t k = 0; k < g.c; ++k) out[k] += in[k];
          }
        const float inv = 1.0f / static_cast<float>(g.divisor(yo, xo));
        for (int64_t k = 0; k < g.c; ++k) out[k] *= inv;
      }
}

void avgpool_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const Window g(a.out[0].shape(), a.in[0].shape(), layer_params(a));
  const float* dy = a.in[0].f32();
  float* dx = a.out[0].f32();
  clear_unless(a.accumulate(0), dx, a.out[0].shape().elements());
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t yo = 0; yo < g.oh; ++yo)
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        const float* gr = dy + g.out_index(b, yo, xo);
        const float inv = 1.0f / static_cast<float>(g.divisor(yo, xo));
        int64_t r0, r1, c0, c1;
        g.rows(yo, r0, r1);
        g.cols(xo, c0, c1);
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            float* out = g.in_at(dx, b, yi, xi);
            for (int64_t k = 0; k < g.c; ++k) out[k] += gr[k] * inv;
          }
      }
}

void gap_fwd(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const int64_t hw = s.h * s.w;
  const float inv = 1.0f / static_cast<float>(hw);
  for (int64_t b = 0; b < s.n; ++b) {
    float* out = y + b * s.c;
    std::fill(out, out + s.c, 0.0f);
    for (int64_t p = 0; p < hw; ++p) {
      const float* in = x + (b * hw + p) * s.c;
      for (int64_t k = 0; k < s.c; ++k) out[k] += in[k];
    }
    for (int64_t k = 0; k < s.c; ++k) out[k] *= inv;
  }
}

void gap_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const Shape& s = a.out[0].shape();
  const float* dy = a.in[0].f32();
  float* dx = a.out[0].f32();
  const int64_t hw = s.h * s.w;
  const float inv = 1.0f / static_cast<float>(hw);
  const bool acc = a.accumulate(0);
  for (int64_t b = 0; b < s.n; ++b) {
    const float* gr = dy + b * s.c;
    for (int64_t p = 0; p < hw; ++p) {
      float* out = dx + (b * hw + p) * s.c;
      if (acc) {
        for (int64_t k = 0; k < s.c; ++k) out[k] += gr[k] * inv;
      } else {
        for (int64_t k = 0; k < s.c; ++k) out[k] = gr[k] * inv;
      }
    }
  }
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// CPU pooling (NHWC FP32), matching torch MaxPool2d and AvgPool2d(count_include_pad=True).
#include "backends/cpu/kernels/pooling.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::has_out;
using detail::kChannelBlock;
using detail::parallel_ranges;

namespace {

// The geometry of one pooling node: every loop below walks output positions
// and, inside, the valid part of the window, with channels innermost so the
// work per window position is one contiguous vector loop.
struct Window {
  int64_t n, h, w, c;  // input
  int64_t oh, ow;      // output
  int64_t kh, kw, sh, sw, ph, pw;

  Window(const Shape& in, const Shape& out, const NodeParams& p)
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

// Output rows (b, yo) in parallel: each writes only its own output row.
template <class F>
void per_output_row(const Window& g, F&& f) {
  parallel_ranges(g.n * g.oh, g.n * g.h * g.w * g.c, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) f(r / g.oh, r % g.oh);
  });
}

// Images in parallel, for the backward passes whose windows may overlap and
// so add into input rows that neighbouring output rows also reach.
template <class F>
void per_image(const Window& g, F&& f) {
  parallel_ranges(g.n, g.n * g.h * g.w * g.c, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) f(b);
  });
}

// One window's gradient to the first maximum of each channel, as the
// overlapping path routes it: kh x kw positions, `row` and `col` floats
// apart, with channels innermost so the loop vectorises.
template <bool kAcc>
void route_window(const float* x, float* dx, const float* ym, const float* gm, int64_t c,
                  int64_t kh, int64_t kw, int64_t row, int64_t col) {
  float open[kChannelBlock];  // 1 until the channel has routed its gradient
  for (int64_t k0 = 0; k0 < c; k0 += kChannelBlock) {
    const int64_t cb = std::min(kChannelBlock, c - k0);
    std::fill(open, open + cb, 1.0f);
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const float* in = x + i * row + j * col + k0;
        float* out = dx + i * row + j * col + k0;
        const float* yr = ym + k0;
        const float* gr = gm + k0;
        for (int64_t k = 0; k < cb; ++k) {
          const float hit = select(in[k] == yr[k], open[k], 0.0f);
          const float r = select(hit != 0.0f, gr[k], 0.0f);
          open[k] -= hit;
          // 0 + r rather than r: the bits of clearing, then adding (-0 becomes +0).
          out[k] = kAcc ? out[k] + r : 0.0f + r;
        }
      }
  }
}

// The common 2x2 window in one pass over the channels: the four positions
// are four streams, and what is still to route passes from one to the next
// in a register (a select, so a NaN or -0 gradient moves unchanged).
// Restrict parameters: the streams are disjoint (the column stride is at
// least c), and without them the vectoriser wants more alias checks than it
// will emit.
template <bool kAcc>
void route_2x2(const float* __restrict x0, const float* __restrict x1, const float* __restrict x2,
               const float* __restrict x3, const float* __restrict ym, const float* __restrict gm,
               float* __restrict d0, float* __restrict d1, float* __restrict d2,
               float* __restrict d3, int64_t c) {
  for (int64_t k = 0; k < c; ++k) {
    const float yk = ym[k];
    const float g0 = gm[k];
    const float r0 = select(x0[k] == yk, g0, 0.0f);
    const float g1 = select(x0[k] == yk, 0.0f, g0);
    const float r1 = select(x1[k] == yk, g1, 0.0f);
    const float g2 = select(x1[k] == yk, 0.0f, g1);
    const float r2 = select(x2[k] == yk, g2, 0.0f);
    const float g3 = select(x2[k] == yk, 0.0f, g2);
    const float r3 = select(x3[k] == yk, g3, 0.0f);
    // 0 + r rather than r: the bits of clearing, then adding (-0 becomes +0).
    d0[k] = kAcc ? d0[k] + r0 : 0.0f + r0;
    d1[k] = kAcc ? d1[k] + r1 : 0.0f + r1;
    d2[k] = kAcc ? d2[k] + r2 : 0.0f + r2;
    d3[k] = kAcc ? d3[k] + r3 : 0.0f + r3;
  }
}

template <bool kAcc>
void route_window_2x2(const float* x, float* dx, const float* ym, const float* gm, int64_t c,
                      int64_t row, int64_t col) {
  route_2x2<kAcc>(x, x + col, x + row, x + row + col, ym, gm, dx, dx + col, dx + row,
                  dx + row + col, c);
}

// The larger of a running maximum and a candidate, as torch's max pooling
// compares: strictly greater keeps the first maximum in row-major order, and
// a NaN wins and stays, so the NaN check sees it.
inline float max_step(float best, float v) {
  return select((v > best) | (v != v), v, best);
}

// A 2x2 window without padding, channels innermost. Starting from the first
// element gives the same bits as starting from -inf: that step would pick it.
template <class C>
void max_2x2(const float* __restrict x0, const float* __restrict x1, const float* __restrict x2,
             const float* __restrict x3, float* __restrict y, C c) {
  for (int64_t k = 0; k < c; ++k) y[k] = max_step(max_step(max_step(x0[k], x1[k]), x2[k]), x3[k]);
}

// Windows that tile the input without overlap (stride == kernel, no
// padding): every input element lies in at most one window, so the gradient
// is written in one pass, output row by output row, with no clearing pass
// and no read-modify-write of dx.
template <bool kAcc>
void maxpool_bwd_tiled(const KernelArgs& a, const Window& g) {
  const float* x = a.in[0].f32();
  const float* y = a.in[1].f32();
  const float* dy = a.in[2].f32();
  float* dx = a.out[0].f32();
  // Floor-mode windows can leave the last rows and columns uncovered.
  const int64_t covered_h = g.oh * g.kh, covered_w = g.ow * g.kw;
  const int64_t row = g.w * g.c, col = g.c;
  per_output_row(g, [&](int64_t b, int64_t yo) {
    if (!kAcc) {
      if (covered_w < g.w)
        for (int64_t yi = yo * g.kh; yi < (yo + 1) * g.kh; ++yi)
          std::memset(g.in_at(dx, b, yi, covered_w), 0,
                      static_cast<size_t>((g.w - covered_w) * g.c) * sizeof(float));
      if (yo == g.oh - 1 && covered_h < g.h)
        std::memset(g.in_at(dx, b, covered_h, 0), 0,
                    static_cast<size_t>((g.h - covered_h) * g.w * g.c) * sizeof(float));
    }
    for (int64_t xo = 0; xo < g.ow; ++xo) {
      const int64_t o = g.out_index(b, yo, xo);
      const int64_t first = ((b * g.h + yo * g.kh) * g.w + xo * g.kw) * g.c;
      if (g.kh == 2 && g.kw == 2)
        route_window_2x2<kAcc>(x + first, dx + first, y + o, dy + o, g.c, row, col);
      else
        route_window<kAcc>(x + first, dx + first, y + o, dy + o, g.c, g.kh, g.kw, row, col);
    }
  });
}

}  // namespace

void maxpool_fwd(const KernelArgs& a) {
  if (detail::run_16bit_per_sample(a, maxpool_fwd)) return;
  const Window g(a.in[0].shape(), a.out[0].shape(), a.params());
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  detail::with_channel_count(g.c, [&](auto cc) {
    if (g.kh == 2 && g.kw == 2 && g.ph == 0 && g.pw == 0) {
      const int64_t row = g.w * g.c, col = g.c;
      per_output_row(g, [&](int64_t b, int64_t yo) {
        for (int64_t xo = 0; xo < g.ow; ++xo) {
          const float* in = g.in_at(x, b, yo * g.sh, xo * g.sw);
          max_2x2(in, in + col, in + row, in + row + col, y + g.out_index(b, yo, xo), cc);
        }
      });
      return;
    }
    per_output_row(g, [&](int64_t b, int64_t yo) {
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        float* out = y + g.out_index(b, yo, xo);
        // Padding is -inf: it never wins, so it is simply not visited.
        std::fill(out, out + cc, -std::numeric_limits<float>::infinity());
        int64_t r0, r1, c0, c1;
        g.rows(yo, r0, r1);
        g.cols(xo, c0, c1);
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const float* in = g.in_at(x, b, yi, xi);
            for (int64_t k = 0; k < cc; ++k) out[k] = max_step(out[k], in[k]);
          }
      }
    });
  });
}

void maxpool_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_16bit_per_sample(a, maxpool_bwd)) return;
  const Window g(a.in[0].shape(), a.in[1].shape(), a.params());
  if (g.sh == g.kh && g.sw == g.kw && g.ph == 0 && g.pw == 0 && g.oh > 0 && g.ow > 0) {
    if (a.accumulate(0))
      maxpool_bwd_tiled<true>(a, g);
    else
      maxpool_bwd_tiled<false>(a, g);
    return;
  }
  const float* x = a.in[0].f32();
  const float* y = a.in[1].f32();
  const float* dy = a.in[2].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  const int64_t image = g.h * g.w * g.c;
  per_image(g, [&](int64_t b) {
    // Windows may overlap, so every window adds into dx.
    clear_unless(acc, dx + b * image, image);
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
  });
}

void avgpool_fwd(const KernelArgs& a) {
  if (detail::run_16bit_per_sample(a, avgpool_fwd)) return;
  const Window g(a.in[0].shape(), a.out[0].shape(), a.params());
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  per_output_row(g, [&](int64_t b, int64_t yo) {
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
  });
}

void avgpool_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_16bit_per_sample(a, avgpool_bwd)) return;
  const Window g(a.out[0].shape(), a.in[0].shape(), a.params());
  const float* dy = a.in[0].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  const int64_t image = g.h * g.w * g.c;
  per_image(g, [&](int64_t b) {
    clear_unless(acc, dx + b * image, image);
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
  });
}

void gap_fwd(const KernelArgs& a) {
  if (detail::run_16bit_per_sample(a, gap_fwd)) return;
  const Shape& s = a.in[0].shape();
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const int64_t hw = s.h * s.w;
  const float inv = 1.0f / static_cast<float>(hw);
  parallel_ranges(s.n, s.elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      float* out = y + b * s.c;
      std::fill(out, out + s.c, 0.0f);
      for (int64_t p = 0; p < hw; ++p) {
        const float* in = x + (b * hw + p) * s.c;
        for (int64_t k = 0; k < s.c; ++k) out[k] += in[k];
      }
      for (int64_t k = 0; k < s.c; ++k) out[k] *= inv;
    }
  });
}

void gap_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_16bit_per_sample(a, gap_bwd)) return;
  const Shape& s = a.out[0].shape();
  const float* dy = a.in[0].f32();
  float* dx = a.out[0].f32();
  const int64_t hw = s.h * s.w;
  const float inv = 1.0f / static_cast<float>(hw);
  const bool acc = a.accumulate(0);
  parallel_ranges(s.n, s.elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
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
  });
}

namespace {

bool is_fp32_compact(const TensorArg& t) {
  return t.desc->dtype == DType::FP32 && t.desc->is_compact();
}

// `rows` pixels of a feature from pixel `first` as compact FP32 rows: the
// feature itself, or widened into `buf` (channels `padded_c()` apart in a
// 16-bit one).
const float* fp32_rows(const TensorArg& t, int64_t first, int64_t rows, std::vector<float>& buf) {
  const int64_t c = t.desc->shape.c, stride = t.desc->padded_c();
  if (is_fp32_compact(t)) return t.f32() + first * c;
  buf.resize(static_cast<size_t>(rows * c));
  const uint16_t* in = static_cast<const uint16_t*>(t.data) + first * stride;
  if (t.desc->dtype == DType::BF16)
    widen_bf16_rows(in, stride, buf.data(), rows, c);
  else
    widen_half_rows(in, stride, buf.data(), rows, c);
  return buf.data();
}

// Rounds compact FP32 rows back into a 16-bit feature (nothing for FP32).
void store_rows(const std::vector<float>& buf, const TensorArg& t, int64_t first, int64_t rows) {
  if (is_fp32_compact(t)) return;
  const int64_t c = t.desc->shape.c, stride = t.desc->padded_c();
  uint16_t* out = static_cast<uint16_t*>(t.data) + first * stride;
  if (t.desc->dtype == DType::BF16)
    narrow_to_bf16_rows(buf.data(), out, stride, rows, c);
  else
    narrow_to_half_rows(buf.data(), out, stride, rows, c);
}

// Training's max pooling on FP32 maps in channel blocks of b (x, y and where
// alike): per window, each tap's position worked out once for all of a
// pixel's blocks, which the view as N * C/b maps of b channels would repeat
// for every block. The same arithmetic, in the same order, as below: the
// maximum from -inf by max_step in window order, then the first position
// equal to it.
void maxpool_fwd_where_blocked(const KernelArgs& a) {
  const Window g(a.in[0].shape(), a.out[0].shape(), a.params());
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  int8_t* where = a.out[1].i8();
  detail::with_channel_count(a.in[0].desc->channel_block, [&](auto b) {
    const int64_t blocks = g.c / b, in_block = g.h * g.w * b, out_block = g.oh * g.ow * b;
    per_output_row(g, [&](int64_t n, int64_t yo) {
      thread_local std::vector<float> best_buf, found_buf;
      best_buf.resize(static_cast<size_t>(g.c));
      found_buf.resize(static_cast<size_t>(g.c));
      float* __restrict best = best_buf.data();
      float* __restrict found = found_buf.data();
      const float* xn = x + n * blocks * in_block;
      const int64_t out_n = n * blocks * out_block;
      int64_t r0, r1;
      g.rows(yo, r0, r1);
      const int64_t top = yo * g.sh - g.ph;
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        int64_t c0, c1;
        g.cols(xo, c0, c1);
        const int64_t left = xo * g.sw - g.pw;
        std::fill(best, best + g.c, -std::numeric_limits<float>::infinity());
        std::fill(found, found + g.c, -1.0f);
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const float* in = xn + (yi * g.w + xi) * b;
            for (int64_t cb = 0; cb < blocks; ++cb) {
              float* __restrict m = best + cb * b;
              const float* __restrict v = in + cb * in_block;
              for (int64_t l = 0; l < b; ++l) m[l] = max_step(m[l], v[l]);
            }
          }
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const auto pos = static_cast<float>((yi - top) * g.kw + (xi - left));
            const float* in = xn + (yi * g.w + xi) * b;
            for (int64_t cb = 0; cb < blocks; ++cb) {
              const float* __restrict m = best + cb * b;
              float* __restrict f = found + cb * b;
              const float* __restrict v = in + cb * in_block;
              for (int64_t l = 0; l < b; ++l)
                f[l] = select((f[l] < 0.0f) & (v[l] == m[l]), pos, f[l]);
            }
          }
        const int64_t at = out_n + (yo * g.ow + xo) * b;
        for (int64_t cb = 0; cb < blocks; ++cb) {
          float* __restrict yb = y + at + cb * out_block;
          int8_t* __restrict wb = where + at + cb * out_block;
          for (int64_t l = 0; l < b; ++l) {
            yb[l] = best[cb * b + l];
            wb[l] = static_cast<int8_t>(found[cb * b + l]);
          }
        }
      }
    });
  });
}

// Its backward on the same layout: per image, dx from 0 (or its value) plus,
// for every window element in output order, the gradient where its maximum
// was: MAXPOOL_BWD_WHERE's bits.
void maxpool_bwd_where_blocked(const KernelArgs& a) {
  const TensorArg &dy = a.in[1], &dx = a.out[0];
  const Window g(dx.shape(), dy.shape(), a.params());
  const int8_t* where = a.in[0].i8();
  const float* gy_all = dy.f32();
  float* gx_all = dx.f32();
  const bool acc = a.accumulate(0);
  detail::with_channel_count(dx.desc->channel_block, [&](auto b) {
    const int64_t blocks = g.c / b, in_block = g.h * g.w * b, out_block = g.oh * g.ow * b;
    per_image(g, [&](int64_t n) {
      float* gx = gx_all + n * blocks * in_block;
      if (!acc) std::memset(gx, 0, static_cast<size_t>(blocks * in_block) * sizeof(float));
      const int64_t out_n = n * blocks * out_block;
      for (int64_t yo = 0; yo < g.oh; ++yo)
        for (int64_t xo = 0; xo < g.ow; ++xo) {
          int64_t r0, r1, c0, c1;
          g.rows(yo, r0, r1);
          g.cols(xo, c0, c1);
          const int64_t top = yo * g.sh - g.ph, left = xo * g.sw - g.pw;
          const int64_t o = out_n + (yo * g.ow + xo) * b;
          for (int64_t yi = r0; yi < r1; ++yi)
            for (int64_t xi = c0; xi < c1; ++xi) {
              const auto pos = static_cast<int8_t>((yi - top) * g.kw + (xi - left));
              float* out = gx + (yi * g.w + xi) * b;
              for (int64_t cb = 0; cb < blocks; ++cb) {
                const int8_t* __restrict wo = where + o + cb * out_block;
                const float* __restrict gy = gy_all + o + cb * out_block;
                float* __restrict d = out + cb * in_block;
                for (int64_t l = 0; l < b; ++l) d[l] += select(wo[l] == pos, gy[l], 0.0f);
              }
            }
        }
    });
  });
}

}  // namespace

void maxpool_fwd_where(const KernelArgs& a) {
  if (a.in[0].desc->is_blocked()) return maxpool_fwd_where_blocked(a);
  KernelArgs y_only = a;
  y_only.out.resize(1);
  maxpool_fwd(y_only);
  const Window g(a.in[0].shape(), a.out[0].shape(), a.params());
  const TensorArg &x = a.in[0], &y = a.out[0];
  int8_t* where = a.out[1].i8();
  const int64_t ws = a.out[1].desc->padded_c();
  // The position MAXPOOL_BWD routes to: the window's first element equal to
  // its maximum, row-major; none (-1) for a NaN, which equals nothing. Per
  // output row, over FP32 rows (a 16-bit tensor's widened once a row), the
  // window's positions in order with the channels innermost, so the scan
  // vectorises.
  detail::with_channel_count(g.c, [&](auto cc) {
    per_output_row(g, [&](int64_t b, int64_t yo) {
      thread_local std::vector<float> x_rows, y_row;
      int64_t r0, r1;
      g.rows(yo, r0, r1);
      const float* xr = fp32_rows(x, (b * g.h + r0) * g.w, (r1 - r0) * g.w, x_rows);
      const int64_t first_out = (b * g.oh + yo) * g.ow;
      const float* yr = fp32_rows(y, first_out, g.ow, y_row);
      // The positions as floats while scanning (selects of one width vectorise).
      thread_local std::vector<float> at;
      at.resize(static_cast<size_t>(g.c));
      for (int64_t xo = 0; xo < g.ow; ++xo) {
        const float* m = yr + xo * cc;
        float* found = at.data();
        std::fill(found, found + cc, -1.0f);
        int64_t c0, c1;
        g.cols(xo, c0, c1);
        const int64_t top = yo * g.sh - g.ph, left = xo * g.sw - g.pw;
        for (int64_t yi = r0; yi < r1; ++yi)
          for (int64_t xi = c0; xi < c1; ++xi) {
            const auto pos = static_cast<float>((yi - top) * g.kw + (xi - left));
            const float* in = xr + ((yi - r0) * g.w + xi) * cc;
            for (int64_t k = 0; k < cc; ++k)
              found[k] = select((found[k] < 0.0f) & (in[k] == m[k]), pos, found[k]);
          }
        int8_t* wo = where + (first_out + xo) * ws;
        for (int64_t k = 0; k < cc; ++k) wo[k] = static_cast<int8_t>(found[k]);
        std::fill(wo + g.c, wo + ws, int8_t{0});
      }
    });
  });
}

void maxpool_bwd_where(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (a.out[0].desc->is_blocked()) return maxpool_bwd_where_blocked(a);
  const TensorArg &dy = a.in[1], &dx = a.out[0];
  const Window g(dx.shape(), dy.shape(), a.params());
  const int8_t* where = a.in[0].i8();
  const int64_t ws = a.in[0].desc->padded_c();
  const bool acc = a.accumulate(0);
  // Per image, as MAXPOOL_BWD's 16-bit form stages a sample: the FP32
  // routing, then one rounding of dx. dx starts at 0 (or its value) and
  // every window element adds r (the gradient where the maximum was, 0
  // elsewhere) in output order: MAXPOOL_BWD's bits, tiled windows or not
  // (-0 becomes +0 as there).
  per_image(g, [&](int64_t b) {
    thread_local std::vector<float> dy_buf, dx_buf;
    const int64_t pixels = g.h * g.w, image = pixels * g.c;
    const float* gy = fp32_rows(dy, b * g.oh * g.ow, g.oh * g.ow, dy_buf);
    float* gx = nullptr;
    if (is_fp32_compact(dx)) {
      gx = dx.f32() + b * image;
    } else if (acc) {
      fp32_rows(dx, b * pixels, pixels, dx_buf);
      gx = dx_buf.data();
    } else {
      dx_buf.resize(static_cast<size_t>(image));
      gx = dx_buf.data();
    }
    if (!acc) std::memset(gx, 0, static_cast<size_t>(image) * sizeof(float));
    detail::with_channel_count(g.c, [&](auto cc) {
      for (int64_t yo = 0; yo < g.oh; ++yo)
        for (int64_t xo = 0; xo < g.ow; ++xo) {
          const int64_t o = yo * g.ow + xo;
          const int8_t* wo = where + (b * g.oh * g.ow + o) * ws;
          int64_t r0, r1, c0, c1;
          g.rows(yo, r0, r1);
          g.cols(xo, c0, c1);
          const int64_t top = yo * g.sh - g.ph, left = xo * g.sw - g.pw;
          for (int64_t yi = r0; yi < r1; ++yi)
            for (int64_t xi = c0; xi < c1; ++xi) {
              const auto pos = static_cast<int8_t>((yi - top) * g.kw + (xi - left));
              float* out = gx + (yi * g.w + xi) * cc;
              for (int64_t k = 0; k < cc; ++k) out[k] += select(wo[k] == pos, gy[o * cc + k], 0.0f);
            }
        }
    });
    store_rows(dx_buf, dx, b * pixels, pixels);
  });
}

}  // namespace tr::cpu

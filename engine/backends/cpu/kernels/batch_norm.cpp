// SPDX-License-Identifier: GPL-3.0-or-later
// Batch normalisation on the CPU, matching torch.nn.BatchNorm2d, alone and
// fused with the ReLU that follows it.
#include "backends/cpu/kernels/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/kernels/row_chunks.h"

namespace tr::cpu {

using detail::float_rows;
using detail::for_each_part;
using detail::has_out;
using detail::kChannelBlock;
using detail::kMaxParts;
using detail::load;
using detail::parallel_ranges;
using detail::part_begin;
using detail::reduction_parts;
using detail::store_value;

// Per-channel sums run over channel blocks with rows inner: the row slice of
// a block is contiguous, so the inner loop vectorises across channels, and
// double accumulators keep large batches (N*H*W in the 10^5) accurate. The
// rows are cut into a fixed number of parts (see parallel.h) whose partials
// are combined in part order, so the statistics do not depend on the threads.
// Features are FP32 or bfloat16 (T), batch norm's scale and shift and their
// gradients FP32 at every precision; bfloat16 rows reach the
// arithmetic widened a chunk at a time (row_chunks.h), which needs compact
// rows no longer than one channel block (the callers check).

namespace {

// The rows of one channel block in storage order, as element offsets: rows
// of C channels (channels innermost), or the rows of block j of a map in
// channel blocks of b ([N, C/b, H, W, b]), each sample's H*W rows b apart
// and the samples a whole sample apart. The reductions walk both in the same
// row order, so a channel's sums are the same bits in either layout.
struct PlainRows {
  int64_t at, stride;
  int64_t next() { return std::exchange(at, at + stride); }
};

struct BlockedRows {
  int64_t at, pixel, pixels, b, gap;  // gap: from a sample's last row to the next sample's first
  // Row `r` of block j of a [N, C, H, W] map in blocks of b.
  BlockedRows(const Shape& s, int64_t block, int64_t j, int64_t r)
      : at((r / (s.h * s.w)) * s.per_sample() + j * s.h * s.w * block + (r % (s.h * s.w)) * block),
        pixel(r % (s.h * s.w)),
        pixels(s.h * s.w),
        b(block),
        gap(s.per_sample() - s.h * s.w * block) {}
  int64_t next() {
    const int64_t r = at;
    at += b;
    if (++pixel == pixels) {
      pixel = 0;
      at += gap;
    }
    return r;
  }
};

// Sums of rows of x - k (s1) and of its squares (s2) over `rows` rows of cb
// channels, four rows per pass over the accumulators, which would otherwise
// cost a load and a store per element.
template <class Rows, class Count>
void moment_sums(const float* x, Rows rows_at, int64_t rows, Count cb, const double* k, double* s1,
                 double* s2) {
  int64_t m = 0;
  for (; m + 4 <= rows; m += 4) {
    const float* r0 = x + rows_at.next();
    const float* r1 = x + rows_at.next();
    const float* r2 = x + rows_at.next();
    const float* r3 = x + rows_at.next();
    for (int64_t c = 0; c < cb; ++c) {
      const double d0 = r0[c] - k[c], d1 = r1[c] - k[c], d2 = r2[c] - k[c], d3 = r3[c] - k[c];
      s1[c] += (d0 + d1) + (d2 + d3);
      s2[c] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
    }
  }
  for (; m < rows; ++m) {
    const float* r = x + rows_at.next();
    for (int64_t c = 0; c < cb; ++c) {
      const double d = r[c] - k[c];
      s1[c] += d;
      s2[c] += d * d;
    }
  }
}

void finish_moments(int64_t rows, int64_t cb, const double* k, const double* s1, const double* s2,
                    double* mean, double* m2) {
  const double n = static_cast<double>(rows);
  for (int64_t c = 0; c < cb; ++c) {
    mean[c] = k[c] + s1[c] / n;
    const double v = s2[c] - s1[c] * s1[c] / n;
    m2[c] = v < 0.0 ? 0.0 : v;  // rounding can dip below zero; a NaN stays
  }
}

// Mean and sum of squared deviations (m2) of rows [lo, hi) of a block of cb
// channels with row stride C, in one read of x. The sums run about the part's
// first row: as that row is one of the samples, s2 - s1^2/n loses at most a
// factor n + 1 to cancellation, which double absorbs (unlike E[x^2] - E[x]^2
// unshifted, where a large mean wipes out the variance).
template <class T>
void part_moments(const T* x, int64_t C, int64_t cb, int64_t lo, int64_t hi, double* mean,
                  double* m2) {
  double k[kChannelBlock], s1[kChannelBlock] = {}, s2[kChannelBlock] = {};
  for (int64_t c = 0; c < cb; ++c) k[c] = load(x, lo * C + c);
  float_rows<1, 0>(lo, hi, C, {x}, {}, false, [&](const auto& in, const auto&, int64_t rows) {
    moment_sums(in[0], PlainRows{0, C}, rows, cb, k, s1, s2);
  });
  finish_moments(hi - lo, cb, k, s1, s2, mean, m2);
}

// The same for rows [lo, hi) of channel block j of an FP32 map in blocks of b.
void part_moments_blocked(const float* x, const Shape& s, int64_t b, int64_t j, int64_t lo,
                          int64_t hi, double* mean, double* m2) {
  double k[kChannelBlock], s1[kChannelBlock] = {}, s2[kChannelBlock] = {};
  const float* first = x + BlockedRows(s, b, j, lo).at;
  for (int64_t c = 0; c < b; ++c) k[c] = first[c];
  detail::with_channel_count(
      b, [&](auto w) { moment_sums(x, BlockedRows(s, b, j, lo), hi - lo, w, k, s1, s2); });
  finish_moments(hi - lo, b, k, s1, s2, mean, m2);
}

// The BN output before a fused ReLU. The backward recomputes it from the
// stored (float) inv_std, while the forward scaled with the double one: the
// two can disagree only where the output is within rounding of zero, the
// ReLU's kink, where either side is a valid subgradient. (Rounding inv_std in
// the forward as well would make the output a staircase in x at float
// resolution, which costs more accuracy than it buys.)
inline float bn_pre_activation(float x, float mean, float scale, float shift) {
  return (x - mean) * scale + shift;
}

// The gradient reaching the BN output: dy itself, or for a fused ReLU dy
// where the BN output was positive.
template <bool kRelu>
inline float bn_out_grad(float dy, float x, float mean, float scale, float shift) {
  if constexpr (kRelu) return select(bn_pre_activation(x, mean, scale, shift) > 0.0f, dy, 0.0f);
  return dy;
}

// Sums of g and g * (x - mean) over `rows` rows of cb channels, g the
// gradient reaching the BN output (see bn_out_grad); x and dy lie alike.
template <bool kRelu, class Rows, class Count>
void dy_sums(const float* x, const float* dy, Rows rows_at, int64_t rows, const float* mean,
             const float* scale, const float* shift, Count cb, double* sdy, double* sdyx) {
  auto g = [&](int64_t at, int64_t c) {
    return bn_out_grad<kRelu>(dy[at + c], x[at + c], mean[c], scale[c], shift[c]);
  };
  int64_t m = 0;
  for (; m + 4 <= rows; m += 4) {
    const int64_t at0 = rows_at.next(), at1 = rows_at.next(), at2 = rows_at.next(),
                  at3 = rows_at.next();
    for (int64_t c = 0; c < cb; ++c) {
      const double a0 = g(at0, c), a1 = g(at1, c), a2 = g(at2, c), a3 = g(at3, c);
      sdy[c] += (a0 + a1) + (a2 + a3);
      sdyx[c] += (a0 * (x[at0 + c] - mean[c]) + a1 * (x[at1 + c] - mean[c])) +
                 (a2 * (x[at2 + c] - mean[c]) + a3 * (x[at3 + c] - mean[c]));
    }
  }
  for (; m < rows; ++m) {
    const int64_t at = rows_at.next();
    for (int64_t c = 0; c < cb; ++c) {
      const double a = g(at, c);
      sdy[c] += a;
      sdyx[c] += a * (x[at + c] - mean[c]);
    }
  }
}

// Sums of g and g * (x - mean) over rows [lo, hi) of a channel block (dy_sums).
template <bool kRelu, class T>
void part_dy_sums(const T* x_all, const T* dy_all, const float* mean, const float* scale,
                  const float* shift, int64_t C, int64_t cb, int64_t lo, int64_t hi, double* sdy,
                  double* sdyx) {
  std::fill(sdy, sdy + cb, 0.0);
  std::fill(sdyx, sdyx + cb, 0.0);
  float_rows<2, 0>(
      lo, hi, C, {x_all, dy_all}, {}, false, [&](const auto& in, const auto&, int64_t rows) {
        dy_sums<kRelu>(in[0], in[1], PlainRows{0, C}, rows, mean, scale, shift, cb, sdy, sdyx);
      });
}

// The elementwise passes, one row of a channel block at a time. Restrict
// parameters: the per-channel arrays live in the caller's frame and reach the
// threads through a pointer, and without the promise the vectoriser would
// re-check each of them against the output for overlap on every row.
// NaN passes the ReLU, as in torch.relu, so the NaN check still sees it.
template <bool kRelu>
inline float relu_if(float v) {
  if constexpr (kRelu) return v < 0.0f ? 0.0f : v;
  return v;
}

// `cb`: int64_t, or a channel block's width as a constant (with_channel_count).
template <bool kRelu, class Count>
void normalise_row(const float* __restrict x, const float* __restrict mean,
                   const float* __restrict scale, const float* __restrict shift,
                   float* __restrict y, Count cb) {
  for (int64_t c = 0; c < cb; ++c)
    y[c] = relu_if<kRelu>(bn_pre_activation(x[c], mean[c], scale[c], shift[c]));
}

template <bool kRelu, class Count>
void scale_bias_row(const float* __restrict x, const float* __restrict scale,
                    const float* __restrict bias, float* __restrict y, Count cb) {
  for (int64_t c = 0; c < cb; ++c) y[c] = relu_if<kRelu>(x[c] * scale[c] + bias[c]);
}

// The same over its input: an inference batch norm whose input dies there
// writes its output in its place (ComputeOpInfo::in_place).
template <bool kRelu, class Count>
void scale_bias_row_in_place(float* __restrict y, const float* __restrict scale,
                             const float* __restrict bias, Count cb) {
  for (int64_t c = 0; c < cb; ++c) y[c] = relu_if<kRelu>(y[c] * scale[c] + bias[c]);
}

template <bool kAcc, bool kRelu, class Count>
void dx_row(const float* __restrict x, const float* __restrict dy, const float* __restrict mean,
            const float* __restrict scale, const float* __restrict shift,
            const float* __restrict k_dy, const float* __restrict k_x, const float* __restrict k_0,
            float* __restrict dx, Count cb) {
  for (int64_t c = 0; c < cb; ++c) {
    const float g = bn_out_grad<kRelu>(dy[c], x[c], mean[c], scale[c], shift[c]);
    const float v = k_dy[c] * g + k_x[c] * (x[c] - mean[c]) + k_0[c];
    dx[c] = kAcc ? dx[c] + v : v;
  }
}

// Per-channel mean and m2 (sum of squared deviations) of a rank's M rows of
// C channels, channel blocks of `block` at a time: part(c0, cb, lo, hi,
// mean, m2) gives rows [lo, hi) of channels [c0, c0 + cb), and each block's
// parts are folded with Chan et al.'s pairwise update in part order.
template <class Part>
void fold_moments(int64_t C, int64_t M, int64_t block, Part part, double* mean, double* m2) {
  const int parts = reduction_parts(M, M * C);
  for (int64_t c0 = 0; c0 < C; c0 += block) {
    const int64_t cb = std::min(block, C - c0);
    double part_mean[kMaxParts][kChannelBlock], part_m2[kMaxParts][kChannelBlock];
    for_each_part(M, parts, [&](int p, int64_t lo, int64_t hi) {
      part(c0, cb, lo, hi, part_mean[p], part_m2[p]);
    });
    double* mean_d = mean + c0;
    double* m2_d = m2 + c0;
    double n_a = static_cast<double>(part_begin(M, parts, 1));
    std::copy(part_mean[0], part_mean[0] + cb, mean_d);
    std::copy(part_m2[0], part_m2[0] + cb, m2_d);
    for (int p = 1; p < parts; ++p) {
      const double n_b = static_cast<double>(part_begin(M, parts, p + 1) - part_begin(M, parts, p));
      const double n = n_a + n_b;
      for (int64_t c = 0; c < cb; ++c) {
        const double delta = part_mean[p][c] - mean_d[c];
        mean_d[c] += delta * (n_b / n);
        m2_d[c] += part_m2[p][c] + delta * delta * (n_a * n_b / n);
      }
      n_a = n;
    }
  }
}

// Channels a reduction takes at a time: kChannelBlock, or as many whole
// channel blocks of a blocked map as fit in it (one parallel pass over the
// rows then walks each of those blocks in turn, instead of one pass a block).
int64_t reduction_block(const DTensor& d) {
  return d.is_blocked() ? kChannelBlock / d.channel_block * d.channel_block : kChannelBlock;
}

// The moments of x as it lies: rows of C channels, or (FP32) channel blocks.
template <class T>
void channel_moments(const T* x, const DTensor& d, double* mean, double* m2) {
  const Shape& s = d.shape;
  const int64_t C = s.c, M = s.n * s.h * s.w;
  if constexpr (std::is_same_v<T, float>) {
    if (d.is_blocked()) {
      const int64_t b = d.channel_block;
      fold_moments(
          C, M, reduction_block(d),
          [&](int64_t c0, int64_t cb, int64_t lo, int64_t hi, double* pm, double* pm2) {
            for (int64_t c = 0; c < cb; c += b)
              part_moments_blocked(x, s, b, (c0 + c) / b, lo, hi, pm + c, pm2 + c);
          },
          mean, m2);
      return;
    }
  }
  fold_moments(
      C, M, kChannelBlock,
      [&](int64_t c0, int64_t cb, int64_t lo, int64_t hi, double* pm, double* pm2) {
        part_moments(x + c0, C, cb, lo, hi, pm, pm2);
      },
      mean, m2);
}

// Runs row(offset, c0, b) over every row of b channels of a map in channel
// blocks of b (d), split over the threads, c0 the row's first channel and b
// a constant where it can be (with_channel_count): for the elementwise
// passes, whose order does not matter.
template <class Row>
void for_each_blocked_row(const DTensor& d, Row row) {
  const Shape& s = d.shape;
  detail::with_channel_count(d.channel_block, [&](auto b) {
    const int64_t pixels = s.h * s.w, blocks = s.c / b;
    parallel_ranges(s.n * blocks, s.elements(), [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q)
        for (int64_t p = 0; p < pixels; ++p) row((q * pixels + p) * b, (q % blocks) * b, b);
    });
  });
}

// SyncBatchNorm: turns a rank's moments into the global batch's, in two sums
// across ranks (the mean first, then the deviations about it, which keeps the
// variance free of cancellation). Returns the global row count.
double global_moments(const RankSum& rank_sum, int64_t C, int64_t M, double* mean, double* m2) {
  std::vector<float> buf(static_cast<size_t>(C) + 1);
  for (int64_t c = 0; c < C; ++c) buf[static_cast<size_t>(c)] = static_cast<float>(mean[c] * M);
  buf[static_cast<size_t>(C)] = static_cast<float>(M);  // ranks' batches may differ (last batch)
  rank_sum.sum(buf.data(), buf.size());
  const double n = buf[static_cast<size_t>(C)];
  for (int64_t c = 0; c < C; ++c) {
    const double global = buf[static_cast<size_t>(c)] / n;
    const double d = mean[c] - global;
    buf[static_cast<size_t>(c)] = static_cast<float>(m2[c] + static_cast<double>(M) * d * d);
    mean[c] = global;
  }
  rank_sum.sum(buf.data(), static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) m2[c] = buf[static_cast<size_t>(c)];
  return n;
}

template <class T>
const T* in_as(const KernelArgs& a, size_t i) {
  return static_cast<const T*>(a.in[i].data);
}
template <class T>
T* out_as(const KernelArgs& a, size_t i) {
  return static_cast<T*>(a.out[i].data);
}

template <bool kRelu, class T>
void bn_train(const KernelArgs& a) {
  const T* x = in_as<T>(a, 0);
  const float* gamma = a.in[1].f32();  // scale and shift: FP32 at every precision
  const float* beta = a.in[2].f32();
  const float* prev_mean = a.in[3].f32();
  const float* prev_var = a.in[4].f32();
  T* y = out_as<T>(a, 0);
  float* saved = a.out[1].f32();
  float* next_mean = a.out[2].f32();
  float* next_var = a.out[3].f32();
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  const NodeParams& pr = a.params();
  const double eps = pr.eps;
  const double momentum = pr.momentum;

  // Every channel's statistics first, so SyncBatchNorm can sum them across
  // ranks in one go before anything is normalised.
  std::vector<double> mean_d(static_cast<size_t>(C)), m2(static_cast<size_t>(C));
  channel_moments(x, *a.in[0].desc, mean_d.data(), m2.data());
  const double count =
      a.rank_sum ? global_moments(*a.rank_sum, C, M, mean_d.data(), m2.data()) : double(M);

  // y = (x - mean) * scale + shift
  std::vector<float> mean(static_cast<size_t>(C)), scale(mean.size()), shift(mean.size());
  for (int64_t ch = 0; ch < C; ++ch) {
    const auto c = static_cast<size_t>(ch);
    mean[c] = static_cast<float>(mean_d[c]);
    const double m2c = m2[c];
    const double var = m2c / count;
    // As in PyTorch: the biased variance normalises, the unbiased one feeds
    // the running estimate. PyTorch refuses a single value per channel;
    // here the biased variance stands in rather than dividing by zero.
    const double unbiased = count > 1 ? m2c / (count - 1) : var;
    const double inv_std = 1.0 / std::sqrt(var + eps);
    saved[ch] = mean[c];
    saved[C + ch] = static_cast<float>(inv_std);
    next_mean[ch] = static_cast<float>((1.0 - momentum) * prev_mean[ch] + momentum * mean[c]);
    next_var[ch] = static_cast<float>((1.0 - momentum) * prev_var[ch] + momentum * unbiased);
    scale[c] = static_cast<float>(load(gamma, ch) * inv_std);
    shift[c] = load(beta, ch);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (a.in[0].desc->is_blocked()) {
      for_each_blocked_row(*a.in[0].desc, [&](int64_t at, int64_t c0, auto b) {
        normalise_row<kRelu>(x + at, mean.data() + c0, scale.data() + c0, shift.data() + c0, y + at,
                             b);
      });
      return;
    }
  }
  for (int64_t c0 = 0; c0 < C; c0 += kChannelBlock) {
    const int64_t cb = std::min(kChannelBlock, C - c0);
    const float* mb = mean.data() + c0;
    const float* sc = scale.data() + c0;
    const float* sh = shift.data() + c0;
    parallel_ranges(M, M * cb, [&](int64_t lo, int64_t hi) {
      float_rows<1, 1>(lo, hi, C, {x + c0}, {y + c0}, false,
                       [&](const auto& in, const auto& out, int64_t rows) {
                         for (int64_t m = 0; m < rows; ++m)
                           normalise_row<kRelu>(in[0] + m * C, mb, sc, sh, out[0] + m * C, cb);
                       });
    });
  }
}

template <bool kRelu, class T>
void bn_infer(const KernelArgs& a) {
  const T* x = in_as<T>(a, 0);
  const float* scale = a.in[1].f32();
  const float* bias = a.in[2].f32();
  T* y = out_as<T>(a, 0);
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  if constexpr (std::is_same_v<T, float>) {
    if (a.in[0].desc->is_blocked()) {
      for_each_blocked_row(*a.in[0].desc, [&](int64_t at, int64_t c0, auto b) {
        if (x == y)
          scale_bias_row_in_place<kRelu>(y + at, scale + c0, bias + c0, b);
        else
          scale_bias_row<kRelu>(x + at, scale + c0, bias + c0, y + at, b);
      });
      return;
    }
  }
  parallel_ranges(M, M * C, [&](int64_t lo, int64_t hi) {
    float_rows<1, 1>(lo, hi, C, {x}, {y}, false,
                     [&](const auto& in, const auto& out, int64_t rows) {
                       for (int64_t m = 0; m < rows; ++m)
                         if (in[0] == out[0])
                           scale_bias_row_in_place<kRelu>(out[0] + m * C, scale, bias, C);
                         else
                           scale_bias_row<kRelu>(in[0] + m * C, scale, bias, out[0] + m * C, C);
                     });
  });
}

// Inputs: x, gamma, [beta when kRelu], saved, dy.
template <bool kRelu, class T>
void bn_backward(const KernelArgs& a) {
  const T* x = in_as<T>(a, 0);
  const float* gamma = a.in[1].f32();  // scale, shift and their gradients: FP32
  const float* beta = kRelu ? a.in[2].f32() : nullptr;
  const float* saved = a.in[kRelu ? 3 : 2].f32();
  const T* dy = in_as<T>(a, kRelu ? 4 : 3);
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  const bool want_dx = has_out(a, 2);
  const bool acc_dx = a.accumulate(2);
  const int parts = reduction_parts(M, M * C);
  const float* inv_std_all = saved + C;

  // The fused ReLU's mask: the forward's scale and shift, recomputed.
  std::vector<float> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
  if (kRelu)
    for (int64_t c = 0; c < C; ++c) {
      scale[static_cast<size_t>(c)] =
          static_cast<float>(static_cast<double>(load(gamma, c)) * inv_std_all[c]);
      shift[static_cast<size_t>(c)] = load(beta, c);
    }
  // Every channel's sums first (SyncBatchNorm sums them across ranks before dx).
  std::vector<double> sdy(static_cast<size_t>(C)), sdyx(static_cast<size_t>(C));
  const DTensor& xd = *a.in[0].desc;
  const int64_t block = reduction_block(xd);
  for (int64_t c0 = 0; c0 < C; c0 += block) {
    const int64_t cb = std::min(block, C - c0);
    double part_sdy[kMaxParts][kChannelBlock], part_sdyx[kMaxParts][kChannelBlock];
    for_each_part(M, parts, [&](int p, int64_t lo, int64_t hi) {
      if constexpr (std::is_same_v<T, float>) {
        if (xd.is_blocked()) {
          std::fill(part_sdy[p], part_sdy[p] + cb, 0.0);
          std::fill(part_sdyx[p], part_sdyx[p] + cb, 0.0);
          detail::with_channel_count(xd.channel_block, [&](auto b) {
            for (int64_t c = c0; c < c0 + cb; c += b)
              dy_sums<kRelu>(x, dy, BlockedRows(s, b, c / b, lo), hi - lo, saved + c,
                             scale.data() + c, shift.data() + c, b, part_sdy[p] + (c - c0),
                             part_sdyx[p] + (c - c0));
          });
          return;
        }
      }
      part_dy_sums<kRelu>(x + c0, dy + c0, saved + c0, scale.data() + c0, shift.data() + c0, C, cb,
                          lo, hi, part_sdy[p], part_sdyx[p]);
    });
    for (int p = 0; p < parts; ++p)
      for (int64_t c = 0; c < cb; ++c) {
        sdy[static_cast<size_t>(c0 + c)] += part_sdy[p][c];
        sdyx[static_cast<size_t>(c0 + c)] += part_sdyx[p][c];
      }
  }
  // The parameter gradients are this rank's sums: the gradient all-reduce
  // averages them over the ranks like every other weight's.
  for (int64_t ch = 0; ch < C; ++ch) {
    const double dgamma = sdyx[static_cast<size_t>(ch)] * inv_std_all[ch];
    const double dbeta = sdy[static_cast<size_t>(ch)];
    if (has_out(a, 0)) {
      float* g = a.out[0].f32();
      g[ch] = static_cast<float>(a.accumulate(0) ? g[ch] + dgamma : dgamma);
    }
    if (has_out(a, 1)) {
      float* g = a.out[1].f32();
      g[ch] = static_cast<float>(a.accumulate(1) ? g[ch] + dbeta : dbeta);
    }
  }
  if (!want_dx) return;
  double count = static_cast<double>(M);
  if (a.rank_sum) {
    // dx depends on the whole global batch through its mean and variance.
    std::vector<float> buf(2 * static_cast<size_t>(C) + 1);
    for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
      buf[c] = static_cast<float>(sdy[c]);
      buf[static_cast<size_t>(C) + c] = static_cast<float>(sdyx[c]);
    }
    buf.back() = static_cast<float>(M);
    a.rank_sum->sum(buf.data(), buf.size());
    for (size_t c = 0; c < static_cast<size_t>(C); ++c) {
      sdy[c] = buf[c];
      sdyx[c] = buf[static_cast<size_t>(C) + c];
    }
    count = buf.back();
  }
  const double inv_m = 1.0 / count;
  T* dx = out_as<T>(a, 2);
  // dx = gamma*inv_std * (dy - mean(dy) - xhat * mean(dy*xhat)), folded
  // into dx = k_dy*dy + k_x*(x - mean) + k_0 per channel; x - mean stays
  // explicit so a large mean does not cancel in float.
  std::vector<float> k_dy_all(static_cast<size_t>(C)), k_x_all(k_dy_all.size()),
      k_0_all(k_dy_all.size());
  for (int64_t c = 0; c < C; ++c) {
    const auto ch = static_cast<size_t>(c);
    const double dgamma = sdyx[ch] * inv_std_all[c];
    const double k = static_cast<double>(load(gamma, c)) * inv_std_all[c];
    k_dy_all[ch] = static_cast<float>(k);
    k_x_all[ch] = static_cast<float>(-k * inv_std_all[c] * dgamma * inv_m);
    k_0_all[ch] = static_cast<float>(-k * sdy[ch] * inv_m);
  }
  if constexpr (std::is_same_v<T, float>) {
    if (xd.is_blocked()) {
      for_each_blocked_row(xd, [&](int64_t at, int64_t c0, auto b) {
        const float* sc = scale.data() + c0;
        const float* sh = shift.data() + c0;
        if (acc_dx)
          dx_row<true, kRelu>(x + at, dy + at, saved + c0, sc, sh, k_dy_all.data() + c0,
                              k_x_all.data() + c0, k_0_all.data() + c0, dx + at, b);
        else
          dx_row<false, kRelu>(x + at, dy + at, saved + c0, sc, sh, k_dy_all.data() + c0,
                               k_x_all.data() + c0, k_0_all.data() + c0, dx + at, b);
      });
      return;
    }
  }
  for (int64_t c0 = 0; c0 < C; c0 += kChannelBlock) {
    const int64_t cb = std::min(kChannelBlock, C - c0);
    const float* mean = saved + c0;
    const float* k_dy = k_dy_all.data() + c0;
    const float* k_x = k_x_all.data() + c0;
    const float* k_0 = k_0_all.data() + c0;
    const float* sc = scale.data() + c0;
    const float* sh = shift.data() + c0;
    parallel_ranges(M, M * cb, [&](int64_t lo, int64_t hi) {
      float_rows<2, 1>(lo, hi, C, {x + c0, dy + c0}, {dx + c0}, acc_dx,
                       [&](const auto& in, const auto& out, int64_t rows) {
                         for (int64_t m = 0; m < rows; ++m) {
                           const int64_t at = m * C;
                           if (acc_dx)
                             dx_row<true, kRelu>(in[0] + at, in[1] + at, mean, sc, sh, k_dy, k_x,
                                                 k_0, out[0] + at, cb);
                           else
                             dx_row<false, kRelu>(in[0] + at, in[1] + at, mean, sc, sh, k_dy, k_x,
                                                  k_0, out[0] + at, cb);
                         }
                       });
    });
  }
}

// Whether an op's bfloat16 operands can be used as they lie: the features
// `bf16_in` / `bf16_out` compact bfloat16 and one channel block wide at most,
// the parameters, their gradients and the statistics compact FP32. Other
// 16-bit operands are staged.
bool native_bf16(const KernelArgs& a, size_t ins, size_t outs,
                 std::initializer_list<size_t> bf16_in, std::initializer_list<size_t> bf16_out) {
  return detail::compact_operands(a, ins, outs, bf16_in, bf16_out) &&
         a.in[0].desc->shape.c <= kChannelBlock;
}

}  // namespace

void bn_fwd_train(const KernelArgs& a) {
  if (native_bf16(a, 5, 4, {0}, {0})) return bn_train<false, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_fwd_train)) return;
  bn_train<false, float>(a);
}
void bn_fwd_infer(const KernelArgs& a) {
  if (native_bf16(a, 3, 1, {0}, {0})) return bn_infer<false, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_fwd_infer)) return;
  bn_infer<false, float>(a);
}
void bn_bwd(const KernelArgs& a) {
  if (native_bf16(a, 4, 3, {0, 3}, {2})) return bn_backward<false, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_bwd)) return;
  bn_backward<false, float>(a);
}
void bn_relu_fwd_train(const KernelArgs& a) {
  if (native_bf16(a, 5, 4, {0}, {0})) return bn_train<true, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_relu_fwd_train)) return;
  bn_train<true, float>(a);
}
void bn_relu_fwd_infer(const KernelArgs& a) {
  if (native_bf16(a, 3, 1, {0}, {0})) return bn_infer<true, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_relu_fwd_infer)) return;
  bn_infer<true, float>(a);
}
void bn_relu_bwd(const KernelArgs& a) {
  if (native_bf16(a, 5, 3, {0, 4}, {2})) return bn_backward<true, uint16_t>(a);
  if (detail::run_16bit_staged(a, bn_relu_bwd)) return;
  bn_backward<true, float>(a);
}

}  // namespace tr::cpu

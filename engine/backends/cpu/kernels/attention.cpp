// SPDX-License-Identifier: GPL-3.0-or-later
// A (sample, head) pair a thread: its keys (and, backward, its values) are
// transposed once into the thread's buffer, so a query's scores are a
// vector of keys at a time; each output value is computed by one thread in
// a fixed order, so no result depends on the thread count, and without
// reassociated sums every build of the kernels gives the same bits. The
// backward takes the pair's queries in order, recomputing each query's
// probabilities once from its log-sum-exp: its gradient at once, the keys'
// and the values' added up over the queries in that order. What a thread
// holds is O(T x d); no T x T matrix exists.
#include "backends/cpu/kernels/attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_ranges;

namespace {

constexpr int64_t kKeyBlock = 64;
// A head's channels held in one thread's accumulators.
constexpr int64_t kMaxHeadDim = 512;

struct Geometry {
  int64_t n = 0, t = 0, c = 0, heads = 1, d = 1;
  float scale = 1.0f;
  int64_t units() const { return n * heads * t; }  // (sample, head, token)
};

Geometry geometry(const KernelArgs& a, const char* op) {
  const Shape& s = a.in[0].shape();
  Geometry g;
  g.heads = a.params().heads;
  if (s.c % 3 != 0)
    throw std::invalid_argument(std::string(op) + a.where() + ": qkv holds " + std::to_string(s.c) +
                                " channels a token, not queries, keys and values of C each");
  g.c = s.c / 3;
  if (g.heads < 1 || g.c % g.heads != 0 || g.c / g.heads > kMaxHeadDim)
    throw std::invalid_argument(std::string(op) + a.where() + ": " + std::to_string(g.heads) +
                                " heads do not split " + std::to_string(g.c) +
                                " channels into heads of at most " + std::to_string(kMaxHeadDim));
  g.n = s.n;
  g.t = s.h * s.w;
  g.d = g.c / g.heads;
  g.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.d)));
  return g;
}

float dot(const float* a, const float* b, int64_t d) {
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= d; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  float tail = 0.0f;
  for (; i < d; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// Where a unit's rows start: its query, key and value heads in qkv, its
// head in o (and do, dqkv's query part), its log-sum-exp.
struct Offsets {
  const Geometry& g;
  int64_t qkv(int64_t n, int64_t token, int64_t h) const {
    return (n * g.t + token) * 3 * g.c + h * g.d;
  }
  int64_t o(int64_t n, int64_t token, int64_t h) const { return (n * g.t + token) * g.c + h * g.d; }
  int64_t lse(int64_t n, int64_t token, int64_t h) const { return (n * g.t + token) * g.heads + h; }
};

void write(float* out, const float* v, int64_t d, float factor, bool accumulate) {
  detail::store(accumulate, out, d, [&](int64_t c) { return v[c] * factor; });
}

// The keys (or values) of one sample's head, transposed: out[c * T + j] is
// channel c of token j, so a query's scores vectorise across the keys.
void transpose_head(const float* qkv, const Offsets& at, const Geometry& g, int64_t n, int64_t h,
                    int64_t part, float* out) {
  for (int64_t j = 0; j < g.t; ++j) {
    const float* row = qkv + at.qkv(n, j, h) + part * g.c;
    for (int64_t c = 0; c < g.d; ++c) out[c * g.t + j] = row[c];
  }
}

// s[j] = sum_c q[c] kt[c * T + j] for keys [j0, j0 + jb): channels outer,
// keys inner (a vector of keys at a time, each sum in channel order).
void scores(const float* q, const float* kt, const Geometry& g, int64_t j0, int64_t jb, float* s) {
  std::fill(s, s + jb, 0.0f);
  for (int64_t c = 0; c < g.d; ++c) {
    const float qc = q[c];
    const float* k = kt + c * g.t + j0;
    for (int64_t j = 0; j < jb; ++j) s[j] += qc * k[j];
  }
}

}  // namespace

void attention_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &attention_fwd)) return;
  constexpr const char* op = "ATTENTION_FWD";
  if (a.in.size() != 1 || a.out.size() != 2)
    throw std::invalid_argument(std::string(op) + a.where() + ": takes qkv and gives o and lse");
  const Geometry g = geometry(a, op);
  const Offsets at{g};
  const float* qkv = a.in[0].f32();
  float* o = a.out[0].f32();
  float* lse = has_out(a, 1) ? a.out[1].f32() : nullptr;
  const float minus_inf = -std::numeric_limits<float>::infinity();
  // A (sample, head) pair a thread: its keys transposed once for all its queries.
  parallel_ranges(g.n * g.heads, g.units() * g.t * g.d * 4, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<float> kt;
    kt.resize(static_cast<size_t>(g.d * g.t));
    std::array<float, kMaxHeadDim> acc;
    float s[kKeyBlock];
    for (int64_t pair = lo; pair < hi; ++pair) {
      const int64_t n = pair / g.heads, h = pair % g.heads;
      transpose_head(qkv, at, g, n, h, 1, kt.data());
      for (int64_t i = 0; i < g.t; ++i) {
        const float* q = qkv + at.qkv(n, i, h);
        std::fill(acc.begin(), acc.begin() + g.d, 0.0f);
        float m = minus_inf, l = 0.0f;
        for (int64_t j0 = 0; j0 < g.t; j0 += kKeyBlock) {
          const int64_t jb = std::min(kKeyBlock, g.t - j0);
          scores(q, kt.data(), g, j0, jb, s);
          float block_max = minus_inf;
          for (int64_t j = 0; j < jb; ++j) {
            s[j] *= g.scale;
            block_max = std::max(block_max, s[j]);
          }
          const float m_new = std::max(m, block_max);
          // The running sums so far, rescaled to the new maximum.
          const float correction = std::exp(m - m_new);
          l *= correction;
          for (int64_t c = 0; c < g.d; ++c) acc[static_cast<size_t>(c)] *= correction;
          for (int64_t j = 0; j < jb; ++j) {
            const float p = std::exp(s[j] - m_new);
            l += p;
            const float* v = qkv + at.qkv(n, j0 + j, h) + 2 * g.c;
            for (int64_t c = 0; c < g.d; ++c) acc[static_cast<size_t>(c)] += p * v[c];
          }
          m = m_new;
        }
        write(o + at.o(n, i, h), acc.data(), g.d, 1.0f / l, false);
        if (lse) lse[at.lse(n, i, h)] = m + std::log(l);
      }
    }
  });
}

void attention_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &attention_bwd)) return;
  constexpr const char* op = "ATTENTION_BWD";
  if (a.in.size() != 4 || a.out.size() != 1)
    throw std::invalid_argument(std::string(op) + a.where() +
                                ": takes qkv, o, lse and do and gives dqkv");
  if (!has_out(a, 0)) return;
  const Geometry g = geometry(a, op);
  const Offsets at{g};
  const float* qkv = a.in[0].f32();
  const float* o = a.in[1].f32();
  const float* lse = a.in[2].f32();
  const float* dout = a.in[3].f32();
  float* dqkv = a.out[0].f32();
  const bool accumulate = a.accumulate(0);
  // A (sample, head) pair a thread, its queries in order: each probability
  // is recomputed once, and the keys' and values' gradients add up over the
  // queries in that order, whatever the thread count.
  parallel_ranges(g.n * g.heads, g.units() * g.t * g.d * 10, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<float> scratch;
    const int64_t td = g.t * g.d;
    scratch.resize(static_cast<size_t>(4 * td + 4 * g.t));
    float* kt = scratch.data();  // keys, transposed
    float* vt = kt + td;         // values, transposed
    float* dk = vt + td;         // [T, d]
    float* dv = dk + td;         // [T, d]
    float* s = dv + td;          // this query's scores, then their probabilities
    float* dp = s + g.t;         // do . v_j
    float* ds = dp + g.t;        // the scores' gradients
    std::array<float, kMaxHeadDim> dq;
    for (int64_t pair = lo; pair < hi; ++pair) {
      const int64_t n = pair / g.heads, h = pair % g.heads;
      transpose_head(qkv, at, g, n, h, 1, kt);
      transpose_head(qkv, at, g, n, h, 2, vt);
      std::fill(dk, dk + 2 * td, 0.0f);
      for (int64_t i = 0; i < g.t; ++i) {
        const float* q = qkv + at.qkv(n, i, h);
        const float* doi = dout + at.o(n, i, h);
        const float l = lse[at.lse(n, i, h)];
        const float delta = dot(doi, o + at.o(n, i, h), g.d);
        scores(q, kt, g, 0, g.t, s);
        scores(doi, vt, g, 0, g.t, dp);
        for (int64_t j = 0; j < g.t; ++j) {
          s[j] = std::exp(s[j] * g.scale - l);
          ds[j] = s[j] * (dp[j] - delta);
        }
        // dq = scale * sum_j ds_j k_j; dk_j += ds_j q; dv_j += p_j do.
        for (int64_t c = 0; c < g.d; ++c) dq[static_cast<size_t>(c)] = dot(ds, kt + c * g.t, g.t);
        write(dqkv + at.qkv(n, i, h), dq.data(), g.d, g.scale, accumulate);
        for (int64_t j = 0; j < g.t; ++j) {
          float* dkj = dk + j * g.d;
          float* dvj = dv + j * g.d;
          const float dsj = ds[j], pj = s[j];
          for (int64_t c = 0; c < g.d; ++c) {
            dkj[c] += dsj * q[c];
            dvj[c] += pj * doi[c];
          }
        }
      }
      for (int64_t j = 0; j < g.t; ++j) {
        float* row = dqkv + at.qkv(n, j, h);
        write(row + g.c, dk + j * g.d, g.d, g.scale, accumulate);
        write(row + 2 * g.c, dv + j * g.d, g.d, 1.0f, accumulate);
      }
    }
  });
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Every output value is computed by one thread in a fixed order, so no
// result depends on the thread count. Dot products keep eight partial sums
// combined in a fixed tree: the loop vectorises without reassociating, and
// every build of the kernels gives the same bits. The backward runs two
// passes, each writing its own rows: the queries' gradients, then the keys'
// and the values' (each probability recomputed in both), so nothing is
// summed across threads.
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

// Unit u as (sample, head, token).
struct Unit {
  int64_t n, h, token;
};
Unit unit_of(const Geometry& g, int64_t u) {
  return {u / (g.heads * g.t), (u / g.t) % g.heads, u % g.t};
}

void write(float* out, const float* v, int64_t d, float factor, bool accumulate) {
  detail::store(accumulate, out, d, [&](int64_t c) { return v[c] * factor; });
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
  parallel_ranges(g.units(), g.units() * g.t * g.d * 4, [&](int64_t lo, int64_t hi) {
    std::array<float, kMaxHeadDim> acc;
    float s[kKeyBlock];
    for (int64_t u = lo; u < hi; ++u) {
      const Unit un = unit_of(g, u);
      const float* q = qkv + at.qkv(un.n, un.token, un.h);
      std::fill(acc.begin(), acc.begin() + g.d, 0.0f);
      float m = minus_inf, l = 0.0f;
      for (int64_t j0 = 0; j0 < g.t; j0 += kKeyBlock) {
        const int64_t jb = std::min(kKeyBlock, g.t - j0);
        float block_max = minus_inf;
        for (int64_t j = 0; j < jb; ++j) {
          s[j] = dot(q, qkv + at.qkv(un.n, j0 + j, un.h) + g.c, g.d) * g.scale;
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
          const float* v = qkv + at.qkv(un.n, j0 + j, un.h) + 2 * g.c;
          for (int64_t c = 0; c < g.d; ++c) acc[static_cast<size_t>(c)] += p * v[c];
        }
        m = m_new;
      }
      write(o + at.o(un.n, un.token, un.h), acc.data(), g.d, 1.0f / l, false);
      if (lse) lse[at.lse(un.n, un.token, un.h)] = m + std::log(l);
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
  const int64_t work = g.units() * g.t * g.d * 6;
  // Each query's do . o: the softmax's share of its gradient. The calling
  // thread's buffer, grown only when a larger layer comes by.
  // (Named through a plain pointer: in the lambdas below, which run on other
  // threads, the thread_local itself would be each thread's own.)
  thread_local std::vector<float> delta_buffer;
  delta_buffer.resize(static_cast<size_t>(g.units()));
  float* const delta = delta_buffer.data();
  parallel_ranges(g.units(), g.units() * g.d, [&](int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; ++u) {
      const Unit un = unit_of(g, u);
      delta[u] =
          dot(dout + at.o(un.n, un.token, un.h), o + at.o(un.n, un.token, un.h), g.d);
    }
  });
  auto delta_of = [&](int64_t n, int64_t h, int64_t token) {
    return delta[(n * g.heads + h) * g.t + token];
  };
  // The queries' gradients: dq_i = scale * sum_j p_ij (do_i . v_j - delta_i) k_j.
  parallel_ranges(g.units(), work, [&](int64_t lo, int64_t hi) {
    std::array<float, kMaxHeadDim> dq;
    for (int64_t u = lo; u < hi; ++u) {
      const Unit un = unit_of(g, u);
      const float* q = qkv + at.qkv(un.n, un.token, un.h);
      const float* doi = dout + at.o(un.n, un.token, un.h);
      const float l = lse[at.lse(un.n, un.token, un.h)], di = delta_of(un.n, un.h, un.token);
      std::fill(dq.begin(), dq.begin() + g.d, 0.0f);
      for (int64_t j = 0; j < g.t; ++j) {
        const float* k = qkv + at.qkv(un.n, j, un.h) + g.c;
        const float p = std::exp(dot(q, k, g.d) * g.scale - l);
        const float ds = p * (dot(doi, k + g.c, g.d) - di);
        for (int64_t c = 0; c < g.d; ++c) dq[static_cast<size_t>(c)] += ds * k[c];
      }
      write(dqkv + at.qkv(un.n, un.token, un.h), dq.data(), g.d, g.scale, accumulate);
    }
  });
  // The keys' and the values' gradients: dk_j = scale * sum_i p_ij (do_i .
  // v_j - delta_i) q_i and dv_j = sum_i p_ij do_i.
  parallel_ranges(g.units(), work, [&](int64_t lo, int64_t hi) {
    std::array<float, kMaxHeadDim> dk, dv;
    for (int64_t u = lo; u < hi; ++u) {
      const Unit un = unit_of(g, u);
      const float* k = qkv + at.qkv(un.n, un.token, un.h) + g.c;
      const float* v = k + g.c;
      std::fill(dk.begin(), dk.begin() + g.d, 0.0f);
      std::fill(dv.begin(), dv.begin() + g.d, 0.0f);
      for (int64_t i = 0; i < g.t; ++i) {
        const float* q = qkv + at.qkv(un.n, i, un.h);
        const float* doi = dout + at.o(un.n, i, un.h);
        const float p = std::exp(dot(q, k, g.d) * g.scale - lse[at.lse(un.n, i, un.h)]);
        const float ds = p * (dot(doi, v, g.d) - delta_of(un.n, un.h, i));
        for (int64_t c = 0; c < g.d; ++c) {
          dk[static_cast<size_t>(c)] += ds * q[c];
          dv[static_cast<size_t>(c)] += p * doi[c];
        }
      }
      float* row = dqkv + at.qkv(un.n, un.token, un.h);
      write(row + g.c, dk.data(), g.d, g.scale, accumulate);
      write(row + 2 * g.c, dv.data(), g.d, 1.0f, accumulate);
    }
  });
}

}  // namespace tr::cpu

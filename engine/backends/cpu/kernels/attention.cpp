// SPDX-License-Identifier: GPL-3.0-or-later
// A (sample, head) pair a thread. Its keys and values are copied once into
// the thread's buffers, zero-padded to whole vectors of 16 keys and 16
// channels (keys also transposed, so scores come 16 keys at a time), and its
// queries are taken 4 at a time, each key's vector loads shared by the 4.
// The forward keeps FlashAttention's running maximum and sum per query over
// blocks of 64 keys; the backward recomputes each block of probabilities
// once from the saved log-sum-exp and adds the keys' and values' gradients
// up over the queries in order. Tiles are explicit 16-float vectors (GCC's
// vector extension: 1 AVX-512, 2 AVX2 or 4 SSE registers) whose lane-wise
// arithmetic is the same in every build; no sum is reassociated and nothing
// is contracted into an FMA, so every build gives the same bits, and each
// output is computed by one thread, so the thread count changes none.
// What a thread holds is O(T x d); no T x T matrix exists. Dropout on the
// probabilities (a training forward's, then its backward's) multiplies
// each by its keep factor, drawn 16 keys at a time from the mask's pure
// function (core/attention_dropout.h): the backward draws the same.
#include "backends/cpu/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels/attention_drop.h"
#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::AttentionDrop;
using detail::has_out;
using detail::parallel_ranges;

namespace {

constexpr int64_t kVecLanes = 16;
using Vec = float __attribute__((vector_size(kVecLanes * sizeof(float))));
constexpr int64_t kQueryTile = 4;
constexpr int64_t kKeyBlock = 64;  // keys per online-softmax step, a multiple of kVecLanes
// A head's channels held in one thread's accumulators.
constexpr int64_t kMaxHeadDim = 512;
constexpr int64_t kMaxChunks = kMaxHeadDim / kVecLanes;

void load(Vec& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
void save(float* p, const Vec& v) {
  std::memcpy(p, &v, sizeof v);
}

int64_t round_up_to(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

struct AttentionGeometry {
  int64_t n = 0, t = 0, c = 0, heads = 1, d = 1;
  int64_t tp = 0;      // tokens padded to whole vectors
  int64_t chunks = 1;  // vectors a head's channels fill
  int64_t dp = 0;      // channels padded to whole vectors
  float scale = 1.0f;
  int64_t units() const { return n * heads * t; }  // (sample, head, token)
};

AttentionGeometry attention_geometry(const KernelArgs& a, const char* op) {
  const Shape& s = a.in[0].shape();
  AttentionGeometry g;
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
  g.tp = round_up_to(g.t, kVecLanes);
  g.chunks = round_up_to(g.d, kVecLanes) / kVecLanes;
  g.dp = g.chunks * kVecLanes;
  g.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.d)));
  return g;
}

// The keep factors of one query's keys [j, j + 16) (attention_drop.h).
void keep_factors(const AttentionDrop& d, uint32_t key, uint32_t index, Vec& f) {
  float lanes[kVecLanes];
  detail::keep_factors(d, key, index, lanes);
  load(f, lanes);
}

// Combines the lanes pairwise, halves first (8 + 8, then 4 + 4, ...): a
// fixed order, and 4 steps of latency instead of 15.
struct LaneMax {
  void operator()(Vec& a, const Vec& b) const { a = a > b ? a : b; }
};
struct LaneSum {
  void operator()(Vec& a, const Vec& b) const { a += b; }
};
template <class Op>
float lane_tree(const Vec& lanes, Op op) {
  Vec v = lanes;
  Vec h = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0);
  op(v, h);
  h = __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  op(v, h);
  h = __builtin_shufflevector(v, v, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  op(v, h);
  h = __builtin_shufflevector(v, v, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  op(v, h);
  return v[0];
}

// Where a unit's rows start: its query, key and value heads in qkv, its
// head in o (and do, dqkv's query part), its log-sum-exp.
struct AttentionOffsets {
  const AttentionGeometry& g;
  int64_t qkv(int64_t n, int64_t token, int64_t h) const {
    return (n * g.t + token) * 3 * g.c + h * g.d;
  }
  int64_t o(int64_t n, int64_t token, int64_t h) const { return (n * g.t + token) * g.c + h * g.d; }
  int64_t lse(int64_t n, int64_t token, int64_t h) const { return (n * g.t + token) * g.heads + h; }
};

// rows[r * dp + c] = src row (first + r), channel c, for `count` rows of
// `stride` floats; channels past d and rows past count up to `rows_to` are zero.
// Plain loops: rows are a few vectors long, and a memmove or memset call a
// row cost more than the copy (a tenth of the step's attention time).
void copy_head_rows(const float* src, int64_t stride, int64_t first, int64_t count, int64_t rows_to,
                    const AttentionGeometry& g, float* rows) {
  for (int64_t r = 0; r < rows_to; ++r) {
    float* row = rows + r * g.dp;
    int64_t c = 0;
    if (r < count) {
      const float* from = src + (first + r) * stride;
      for (; c < g.d; ++c) row[c] = from[c];
    }
    for (; c < g.dp; ++c) row[c] = 0.0f;
  }
}

// out[c * tp + j] = rows[j * dp + c]: a channel's values over the keys.
void transpose_head_rows(const float* rows, const AttentionGeometry& g, float* out) {
  for (int64_t j = 0; j < g.tp; ++j)
    for (int64_t c = 0; c < g.dp; ++c) out[c * g.tp + j] = rows[j * g.dp + c];
}

// s[qi * ld + j] = factor * sum_c a[qi * dp + c] bt[c * tp + j0 + j]
// (+ key_bias[j0 + j] when given) for the tile's queries and keys
// [j0, j0 + jn), jn a multiple of kVecLanes: channels outer, each sum in
// channel order.
template <int Chunks>
void tile_products(const float* a, const float* bt, const AttentionGeometry& g, int64_t j0,
                   int64_t jn, float factor, const float* key_bias, float* s, int64_t ld) {
  const int64_t dp = Chunks > 0 ? Chunks * kVecLanes : g.dp;
  for (int64_t jc = 0; jc < jn; jc += kVecLanes) {
    Vec acc[kQueryTile] = {};
    const float* col = bt + j0 + jc;
    for (int64_t c = 0; c < dp; ++c) {
      Vec b;
      load(b, col + c * g.tp);
      for (int64_t qi = 0; qi < kQueryTile; ++qi) acc[qi] += b * a[qi * dp + c];
    }
    Vec bias{};
    if (key_bias) load(bias, key_bias + j0 + jc);
    for (int64_t qi = 0; qi < kQueryTile; ++qi) save(s + qi * ld + jc, acc[qi] * factor + bias);
  }
}

// 0 for the tokens, -inf for the padding after them: a padded key's score
// becomes -inf, so no mask is needed, and its probability exp_approx's
// floor (1.6e-38 against a sum of at least 1), on a value row of zeros.
void fill_key_bias(const AttentionGeometry& g, float* bias) {
  std::fill(bias, bias + g.t, 0.0f);
  std::fill(bias + g.t, bias + g.tp, -std::numeric_limits<float>::infinity());
}

// The tile's queries [i0, i0 + kQueryTile), zero rows past the last token.
void load_queries(const float* qkv, const AttentionOffsets& at, int64_t n, int64_t h, int64_t i0,
                  float* q) {
  const AttentionGeometry& g = at.g;
  copy_head_rows(qkv + at.qkv(n, 0, h), 3 * g.c, i0, std::min(kQueryTile, g.t - i0), kQueryTile, g,
                 q);
}

// Adds factor * row into out (or writes it), the head's d channels.
void write_head(float* out, const float* row, int64_t d, float factor, bool accumulate) {
  detail::store(accumulate, out, d, [&](int64_t c) { return row[c] * factor; });
}

template <int Chunks>
void forward_pair(const float* qkv, const AttentionOffsets& at, int64_t n, int64_t h,
                  const AttentionDrop& drop, const float* key_bias, float* buffer, float* o,
                  float* lse) {
  const AttentionGeometry& g = at.g;
  const uint32_t key = drop.on ? drop.key(n, h, g.heads) : 0;
  const int64_t chunks = Chunks > 0 ? Chunks : g.chunks;
  const int64_t dp = chunks * kVecLanes;
  float* kt = buffer;              // [dp][tp]
  float* vr = kt + dp * g.tp;      // [tp][dp]
  float* q = vr + g.tp * dp;       // [kQueryTile][dp]
  float* s = q + kQueryTile * dp;  // [kQueryTile][kKeyBlock]
  copy_head_rows(qkv + at.qkv(n, 0, h) + g.c, 3 * g.c, 0, g.t, g.tp, g, vr);
  transpose_head_rows(vr, g, kt);
  copy_head_rows(qkv + at.qkv(n, 0, h) + 2 * g.c, 3 * g.c, 0, g.t, g.tp, g, vr);
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t i0 = 0; i0 < g.t; i0 += kQueryTile) {
    load_queries(qkv, at, n, h, i0, q);
    Vec acc[kQueryTile][Chunks > 0 ? Chunks : kMaxChunks];
    for (int64_t qi = 0; qi < kQueryTile; ++qi)
      for (int64_t k = 0; k < chunks; ++k) acc[qi][k] = Vec{};
    float m[kQueryTile], l[kQueryTile];
    std::fill_n(m, kQueryTile, minus_inf);
    std::fill_n(l, kQueryTile, 0.0f);
    for (int64_t j0 = 0; j0 < g.t; j0 += kKeyBlock) {
      const int64_t jn = std::min(kKeyBlock, g.tp - j0);
      const int64_t valid = std::min(jn, g.t - j0);
      tile_products<Chunks>(q, kt, g, j0, jn, g.scale, key_bias, s, kKeyBlock);
      for (int64_t qi = 0; qi < kQueryTile; ++qi) {
        float* sq = s + qi * kKeyBlock;
        // Lane-wise maxima and sums first, then one fixed tree across the
        // lanes: a serial chain over the keys would wait on every add.
        Vec lanes;
        load(lanes, sq);
        for (int64_t jc = kVecLanes; jc < jn; jc += kVecLanes) {
          Vec v;
          load(v, sq + jc);
          LaneMax{}(lanes, v);
        }
        const float m_new = std::max(m[qi], lane_tree(lanes, LaneMax{}));
        for (int64_t j = 0; j < jn; ++j) sq[j] = exp_approx(sq[j] - m_new);
        load(lanes, sq);
        for (int64_t jc = kVecLanes; jc < jn; jc += kVecLanes) {
          Vec p;
          load(p, sq + jc);
          lanes += p;
        }
        const float block_sum = lane_tree(lanes, LaneSum{});
        // The sums normalise every probability; the values see the kept ones.
        if (drop.on) {
          const auto row = static_cast<uint32_t>((i0 + qi) * g.t + j0);
          for (int64_t jc = 0; jc < jn; jc += kVecLanes) {
            Vec p, f;
            load(p, sq + jc);
            keep_factors(drop, key, row + static_cast<uint32_t>(jc), f);
            save(sq + jc, p * f);
          }
        }
        if (j0 == 0) {
          l[qi] = block_sum;
        } else {
          // The running sums so far, rescaled to the new maximum.
          const float correction = exp_approx(m[qi] - m_new);
          for (int64_t k = 0; k < chunks; ++k) acc[qi][k] *= correction;
          l[qi] = l[qi] * correction + block_sum;
        }
        m[qi] = m_new;
      }
      for (int64_t j = 0; j < valid; ++j) {
        const float* vj = vr + (j0 + j) * dp;
        for (int64_t k = 0; k < chunks; ++k) {
          Vec v;
          load(v, vj + k * kVecLanes);
          for (int64_t qi = 0; qi < kQueryTile; ++qi) acc[qi][k] += v * s[qi * kKeyBlock + j];
        }
      }
    }
    for (int64_t qi = 0; qi < std::min(kQueryTile, g.t - i0); ++qi) {
      float row[kMaxHeadDim];
      for (int64_t k = 0; k < chunks; ++k) save(row + k * kVecLanes, acc[qi][k]);
      write_head(o + at.o(n, i0 + qi, h), row, g.d, 1.0f / l[qi], false);
      if (lse) lse[at.lse(n, i0 + qi, h)] = m[qi] + std::log(l[qi]);
    }
  }
}

template <int Chunks>
void backward_pair(const float* qkv, const float* o, const float* lse, const float* dout,
                   const AttentionOffsets& at, int64_t n, int64_t h, bool accumulate,
                   const AttentionDrop& drop, const float* key_bias, float* buffer, float* dqkv) {
  const AttentionGeometry& g = at.g;
  const uint32_t key = drop.on ? drop.key(n, h, g.heads) : 0;
  const int64_t chunks = Chunks > 0 ? Chunks : g.chunks;
  const int64_t dp = chunks * kVecLanes;
  const int64_t td = g.tp * dp;
  float* kr = buffer;                 // keys [tp][dp]
  float* kt = kr + td;                // keys [dp][tp]
  float* vt = kt + td;                // values [dp][tp]
  float* dk = vt + td;                // [tp][dp]
  float* dv = dk + td;                // [tp][dp]
  float* q = dv + td;                 // [kQueryTile][dp]
  float* go = q + kQueryTile * dp;    // do of the tile's queries, [kQueryTile][dp]
  float* p = go + kQueryTile * dp;    // scores, then probabilities [kQueryTile][tp]
  float* ds = p + kQueryTile * g.tp;  // do . v_j, then the scores' gradients
  copy_head_rows(qkv + at.qkv(n, 0, h) + 2 * g.c, 3 * g.c, 0, g.t, g.tp, g, kr);
  transpose_head_rows(kr, g, vt);
  copy_head_rows(qkv + at.qkv(n, 0, h) + g.c, 3 * g.c, 0, g.t, g.tp, g, kr);
  transpose_head_rows(kr, g, kt);
  std::fill(dk, dk + 2 * td, 0.0f);
  for (int64_t i0 = 0; i0 < g.t; i0 += kQueryTile) {
    const int64_t qn = std::min(kQueryTile, g.t - i0);
    load_queries(qkv, at, n, h, i0, q);
    copy_head_rows(dout + at.o(n, 0, h), g.c, i0, qn, kQueryTile, g, go);
    float l[kQueryTile] = {}, delta[kQueryTile] = {};
    for (int64_t qi = 0; qi < qn; ++qi) {
      l[qi] = lse[at.lse(n, i0 + qi, h)];
      const float* oi = o + at.o(n, i0 + qi, h);
      float acc = 0.0f;
      for (int64_t c = 0; c < g.d; ++c) acc += go[qi * dp + c] * oi[c];
      delta[qi] = acc;
    }
    tile_products<Chunks>(q, kt, g, 0, g.tp, g.scale, key_bias, p, g.tp);
    tile_products<Chunks>(go, vt, g, 0, g.tp, 1.0f, nullptr, ds, g.tp);
    for (int64_t qi = 0; qi < kQueryTile; ++qi) {
      float* pq = p + qi * g.tp;
      float* dsq = ds + qi * g.tp;
      // A padded key's probability is exp_approx's floor on zero key and
      // value rows; a padded query's do row is zero, so its ds_j and its
      // share of dv_j are 0.
      const float lq = l[qi], dq_delta = delta[qi];
      for (int64_t j = 0; j < g.tp; ++j) pq[j] = exp_approx(pq[j] - lq);
      if (!drop.on) {
        for (int64_t j = 0; j < g.tp; ++j) dsq[j] = pq[j] * (dsq[j] - dq_delta);
        continue;
      }
      // With dropout do . v_j is the kept probability's gradient: its own is
      // that times the keep factor, and the values see the kept probabilities.
      const auto row = static_cast<uint32_t>((i0 + qi) * g.t);
      for (int64_t jc = 0; jc < g.tp; jc += kVecLanes) {
        Vec pv, gv, f;
        load(pv, pq + jc);
        load(gv, dsq + jc);
        keep_factors(drop, key, row + static_cast<uint32_t>(jc), f);
        save(dsq + jc, pv * (gv * f - dq_delta));
        save(pq + jc, pv * f);
      }
    }
    // dq = scale * sum_j ds_j k_j; dk_j += ds_j q; dv_j += p_j do, queries in order.
    constexpr int64_t kHeld = Chunks > 0 ? Chunks : kMaxChunks;
    Vec gq[kQueryTile][kHeld], qv[kQueryTile][kHeld], gov[kQueryTile][kHeld];
    for (int64_t qi = 0; qi < kQueryTile; ++qi)
      for (int64_t k = 0; k < chunks; ++k) {
        gq[qi][k] = Vec{};
        load(qv[qi][k], q + qi * dp + k * kVecLanes);
        load(gov[qi][k], go + qi * dp + k * kVecLanes);
      }
    for (int64_t j = 0; j < g.t; ++j) {
      for (int64_t k = 0; k < chunks; ++k) {
        Vec kj, gk, gv;
        load(kj, kr + j * dp + k * kVecLanes);
        load(gk, dk + j * dp + k * kVecLanes);
        load(gv, dv + j * dp + k * kVecLanes);
        for (int64_t qi = 0; qi < kQueryTile; ++qi) {
          const float dsij = ds[qi * g.tp + j], pij = p[qi * g.tp + j];
          gq[qi][k] += kj * dsij;
          gk += qv[qi][k] * dsij;
          gv += gov[qi][k] * pij;
        }
        save(dk + j * dp + k * kVecLanes, gk);
        save(dv + j * dp + k * kVecLanes, gv);
      }
    }
    for (int64_t qi = 0; qi < qn; ++qi) {
      float row[kMaxHeadDim];
      for (int64_t k = 0; k < chunks; ++k) save(row + k * kVecLanes, gq[qi][k]);
      write_head(dqkv + at.qkv(n, i0 + qi, h), row, g.d, g.scale, accumulate);
    }
  }
  for (int64_t j = 0; j < g.t; ++j) {
    float* row = dqkv + at.qkv(n, j, h);
    write_head(row + g.c, dk + j * dp, g.d, g.scale, accumulate);
    write_head(row + 2 * g.c, dv + j * dp, g.d, 1.0f, accumulate);
  }
}

// Calls body(std::integral_constant<int, Chunks>) with the head's vector
// count fixed at compile time for the common head sizes (up to 64 channels),
// 0 (counted at run time) beyond.
template <class Body>
void with_chunks(int64_t chunks, Body body) {
  switch (chunks) {
    case 1:
      return body(std::integral_constant<int, 1>{});
    case 2:
      return body(std::integral_constant<int, 2>{});
    case 3:
      return body(std::integral_constant<int, 3>{});
    case 4:
      return body(std::integral_constant<int, 4>{});
    default:
      return body(std::integral_constant<int, 0>{});
  }
}

// Runs pair_body(chunks, n, h, key_bias, buffer) for every (sample, head)
// pair, the pairs split over the threads; each thread's buffer holds the
// key bias (filled once) and `floats` more for the pair's rows.
template <class PairBody>
void for_each_pair(const AttentionGeometry& g, int64_t work, int64_t floats, PairBody pair_body) {
  parallel_ranges(g.n * g.heads, work, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<float> buffer;
    buffer.resize(static_cast<size_t>(g.tp + floats));
    float* key_bias = buffer.data();
    fill_key_bias(g, key_bias);
    with_chunks(g.chunks, [&](auto chunks) {
      for (int64_t pair = lo; pair < hi; ++pair)
        pair_body(chunks, pair / g.heads, pair % g.heads, key_bias, key_bias + g.tp);
    });
  });
}

}  // namespace

void attention_fwd(const KernelArgs& a) {
  if (detail::run_16bit_per_sample(a, &attention_fwd)) return;
  constexpr const char* op = "ATTENTION_FWD";
  if (a.in.size() != 1 || a.out.empty() || a.out.size() > 2)
    throw std::invalid_argument(std::string(op) + a.where() +
                                ": takes qkv and gives o, and lse when training");
  const AttentionGeometry g = attention_geometry(a, op);
  const AttentionOffsets at{g};
  const float* qkv = a.in[0].f32();
  float* o = a.out[0].f32();
  float* lse = has_out(a, 1) ? a.out[1].f32() : nullptr;
  const AttentionDrop drop = detail::attention_drop(a, g.n, lse != nullptr);
  for_each_pair(g, g.units() * g.t * g.d * 4, 2 * g.tp * g.dp + kQueryTile * (g.dp + kKeyBlock),
                [&](auto chunks, int64_t n, int64_t h, const float* key_bias, float* b) {
                  forward_pair<decltype(chunks)::value>(qkv, at, n, h, drop, key_bias, b, o, lse);
                });
}

void attention_bwd(const KernelArgs& a) {
  if (detail::run_16bit_per_sample(a, &attention_bwd)) return;
  constexpr const char* op = "ATTENTION_BWD";
  if (a.in.size() != 4 || a.out.size() != 1)
    throw std::invalid_argument(std::string(op) + a.where() +
                                ": takes qkv, o, lse and do and gives dqkv");
  if (!has_out(a, 0)) return;
  const AttentionGeometry g = attention_geometry(a, op);
  const AttentionOffsets at{g};
  const float* qkv = a.in[0].f32();
  const float* o = a.in[1].f32();
  const float* lse = a.in[2].f32();
  const float* dout = a.in[3].f32();
  float* dqkv = a.out[0].f32();
  const bool accumulate = a.accumulate(0);
  const AttentionDrop drop = detail::attention_drop(a, g.n, true);
  for_each_pair(g, g.units() * g.t * g.d * 10, 5 * g.tp * g.dp + kQueryTile * 2 * (g.dp + g.tp),
                [&](auto chunks, int64_t n, int64_t h, const float* key_bias, float* b) {
                  backward_pair<decltype(chunks)::value>(qkv, o, lse, dout, at, n, h, accumulate,
                                                         drop, key_bias, b, dqkv);
                });
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// BF16 attention on AMX tiles. A thread takes one (sample, head) pair at a
// time, as our own kernels do (attention.cpp), and lays the pair's keys,
// values and queries out once in the forms the tile products read: a
// product's left operand as bfloat16 rows, its right one as pairs of rows
// interleaved (the layout TDPBF16PS reads), everything zero-padded to whole
// tiles (16 rows, 32 bfloat16 of depth). Queries go 32 at a time; their
// scores against every key ([32 x T] floats in the thread's buffer, never
// T x T) are softmaxed in FP32 with AVX-512 and rounded to bfloat16 before
// they weigh the values. The backward recomputes the probabilities from the
// saved log-sum-exp (FlashAttention's method) and sums the keys' and values'
// gradients, transposed_head, over the query blocks in order.
//
// Only this file holds AMX and AVX-512 code, compiled for those extensions
// function by function and run only where matrix_tiles_usable() says so.
// Each output is written by one thread in a fixed order: the results do not
// depend on the thread count. They are not our own kernels' bits (those
// keep FP32 products): the backend runs these only for a BF16 plan.
#include "backends/cpu/kernels/tile_attention.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/kernels/attention_drop.h"
#include "backends/cpu/kernels/avx512_bf16_math.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/bf16_convert.h"
#include "core/cpu_features.h"

namespace tr::cpu {

namespace {

#define TR_TILES \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

constexpr int64_t kRows = 16;   // a tile's rows, and the floats of a vector
constexpr int64_t kDepth = 32;  // bfloat16 along a product's depth per tile step
// Queries a step: up to four row tiles, so that a short sequence's keys and
// values gather their gradients in one product over all its queries (each
// tile loaded and stored once), not one a block.
constexpr int64_t kQueryBlock = 64;

int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}

// ---- tiles ------------------------------------------------------------------

// Palette 1, eight tiles of 16 rows x 64 bytes: 0 and 1 left operands, 2
// and 3 right ones, 4 to 7 a 2 x 2 block of FP32 sums.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes of the
// configuration, and its _tile_loadd that it reads no memory at all, so
// stores before them could be dropped or moved past them: these say what
// they read.
TR_TILES void configure_tiles() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = kRows;
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(c));
}

#define TR_TILE_LOAD(tile, base, stride)                                                     \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #tile ::"r"(static_cast<const void*>(base)), \
                   "r"(static_cast<long>(stride))                                            \
                   : "memory")

// Hands the tile state back, so that switching threads saves 8 KiB less.
TR_TILES void release_tiles() {
  _tile_release();
}

// c [16 mt x 16 nt] (ldc floats a row) = (load_c ? c : 0) + a b, over
// `steps` steps of 32: a bfloat16 rows (lda), b pairs of rows interleaved:
// its row r holds (b[2r][n], b[2r+1][n]) for every column n (ldb).
TR_TILES void tile_block(int mt, int nt, int64_t steps, const uint16_t* a, int64_t lda,
                         const uint16_t* b, int64_t ldb, float* c, int64_t ldc, bool load_c) {
  const int64_t sa = lda * 2, sb = ldb * 2, sc = ldc * 4;
  float* c1 = c + kRows * ldc;
  if (load_c) {
    TR_TILE_LOAD(4, c, sc);
    if (nt > 1) TR_TILE_LOAD(5, c + kRows, sc);
    if (mt > 1) TR_TILE_LOAD(6, c1, sc);
    if (mt > 1 && nt > 1) TR_TILE_LOAD(7, c1 + kRows, sc);
  } else {
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
  }
  for (int64_t k = 0; k < steps; ++k) {
    const uint16_t* ak = a + kDepth * k;
    const uint16_t* bk = b + kRows * k * ldb;
    TR_TILE_LOAD(0, ak, sa);
    TR_TILE_LOAD(2, bk, sb);
    _tile_dpbf16ps(4, 0, 2);
    if (nt > 1) {
      TR_TILE_LOAD(3, bk + 2 * kRows, sb);
      _tile_dpbf16ps(5, 0, 3);
    }
    if (mt > 1) {
      TR_TILE_LOAD(1, ak + kRows * lda, sa);
      _tile_dpbf16ps(6, 1, 2);
      if (nt > 1) _tile_dpbf16ps(7, 1, 3);
    }
  }
  _tile_stored(4, c, sc);
  if (nt > 1) _tile_stored(5, c + kRows, sc);
  if (mt > 1) _tile_stored(6, c1, sc);
  if (mt > 1 && nt > 1) _tile_stored(7, c1 + kRows, sc);
}

// c [m x n] = (load_c ? c : 0) + a [m x k] b [k x n]: m and n multiples of
// 16, k of 32; b's column j starts at b + 2j.
TR_TILES void tile_product(int64_t m, int64_t n, int64_t k, const uint16_t* a, int64_t lda,
                           const uint16_t* b, int64_t ldb, float* c, int64_t ldc, bool load_c) {
  for (int64_t i = 0; i < m; i += 2 * kRows)
    for (int64_t j = 0; j < n; j += 2 * kRows)
      tile_block(static_cast<int>(std::min<int64_t>(2, (m - i) / kRows)),
                 static_cast<int>(std::min<int64_t>(2, (n - j) / kRows)), k / kDepth, a + i * lda,
                 lda, b + 2 * j, ldb, c + i * ldc + j, ldc, load_c);
}

// ---- vectors ----------------------------------------------------------------

// 32 bfloat16: a's 16 and b's 16 interleaved (a0 b0 a1 b1 ...).
TR_TILES inline __m512i interleave(__m512 a, __m512 b) {
  const __m512bh h = _mm512_cvtne2ps_pbh(b, a);  // a in the low half
  __m512i v;
  std::memcpy(&v, &h, sizeof v);
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, v);
}

TR_TILES inline __m512 keep16(const detail::AttentionDrop& d, uint32_t key, uint32_t index) {
  float f[kRows];
  detail::keep_factors(d, key, index, f);
  return _mm512_loadu_ps(f);
}

// ---- the pair's operands ------------------------------------------------------

struct TileGeometry {
  int64_t n = 0, t = 0, c = 0, heads = 1, d = 1;
  int64_t tk = 0;  // tokens padded to whole blocks of 32 (keys and queries)
  int64_t dk = 0;  // a head's channels padded to whole steps of 32 (depth of q k)
  int64_t dn = 0;  // the same padded to whole tiles of 16 (width of p v)
  float scale = 1.0f;
  const uint16_t* head(const uint16_t* qkv, int64_t n_, int64_t h, int part) const {
    return qkv + n_ * t * 3 * c + part * c + h * d;
  }
};

TileGeometry tile_geometry(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  TileGeometry g;
  g.heads = a.params().heads;
  g.c = s.c / 3;
  if (s.c % 3 != 0 || g.heads < 1 || g.c % g.heads != 0)
    throw std::invalid_argument("ATTENTION" + a.where() + ": " + std::to_string(s.c) +
                                " channels a token do not split into queries, keys and values of " +
                                std::to_string(g.heads) + " heads");
  g.n = s.n;
  g.t = s.h * s.w;
  g.d = g.c / g.heads;
  g.tk = round_up(g.t, kDepth);
  g.dk = round_up(g.d, kDepth);
  g.dn = round_up(g.d, kRows);
  g.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(g.d)));
  return g;
}

// rows [t x ld]: token j's d channels of the head at `src` (tokens `stride`
// apart). Padding stays as it was (zero).
TR_TILES void copy_rows(const uint16_t* src, int64_t stride, const TileGeometry& g, uint16_t* rows,
                        int64_t ld) {
  for (int64_t j = 0; j < g.t; ++j)
    for (int64_t c = 0; c < g.d; c += kDepth) {
      const __mmask32 m =
          g.d - c >= kDepth ? ~__mmask32{0} : static_cast<__mmask32>((1u << (g.d - c)) - 1u);
      _mm512_mask_storeu_epi16(rows + j * ld + c, m,
                               _mm512_maskz_loadu_epi16(m, src + j * stride + c));
    }
}

// Token j's channel pair c2 as one 32-bit word, for 16 tokens from j0 (0
// past the tokens): a gather of the pairs' words `stride` bfloat16 apart.
TR_TILES inline __m512i pair_words(const uint16_t* src, int64_t stride, int64_t t, int64_t j0,
                                   int64_t c2) {
  const __m512i rows =
      _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(j0)),
                       _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
  const __m512i at = _mm512_mullo_epi32(rows, _mm512_set1_epi32(static_cast<int>(stride)));
  return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), avx512::lanes(t - j0), at,
                                     src + 2 * c2, 2);
}

// The head's channels as pairs interleaved over the tokens, [dk/2][2 tk]:
// the right operand of a product over the channels (q kᵀ, do vᵀ). An odd
// last channel goes alone (its pair's other half is not the head's).
TR_TILES void channel_pairs(const uint16_t* src, int64_t stride, const TileGeometry& g,
                            uint16_t* out) {
  for (int64_t c2 = 0; c2 < g.d / 2; ++c2)
    for (int64_t j0 = 0; j0 < g.t; j0 += kRows)
      _mm512_storeu_si512(out + c2 * 2 * g.tk + 2 * j0, pair_words(src, stride, g.t, j0, c2));
  if (g.d % 2)
    for (int64_t j = 0; j < g.t; ++j) out[(g.d / 2) * 2 * g.tk + 2 * j] = src[j * stride + g.d - 1];
}

// The head transposed_head, [dn][tk]: the left operand of a product over the
// queries (qᵀ ds, doᵀ p).
TR_TILES void transposed_head(const uint16_t* src, int64_t stride, const TileGeometry& g,
                              uint16_t* out) {
  for (int64_t c2 = 0; c2 < g.d / 2; ++c2)
    for (int64_t j0 = 0; j0 < g.t; j0 += kRows) {
      const __m512i w = pair_words(src, stride, g.t, j0, c2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * c2 * g.tk + j0),
                          _mm512_maskz_cvtepi32_epi16(avx512::kAll, w));
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out + (2 * c2 + 1) * g.tk + j0),
          _mm512_maskz_cvtepi32_epi16(avx512::kAll, _mm512_maskz_srli_epi32(avx512::kAll, w, 16)));
    }
  if (g.d % 2)
    for (int64_t j = 0; j < g.t; ++j) out[(g.d - 1) * g.tk + j] = src[j * stride + g.d - 1];
}

// The head's tokens as pairs interleaved over the channels, [tk/2][2 dn]:
// the right operand of a product over the tokens (p v, ds k).
TR_TILES void token_pairs(const uint16_t* src, int64_t stride, const TileGeometry& g,
                          uint16_t* out) {
  // Lane 2i from the first token's channel i, 2i + 1 from the second's.
  const __m512i order = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                         8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  for (int64_t j = 0; j < g.t; j += 2) {
    const uint16_t* a = src + j * stride;
    const bool second = j + 1 < g.t;
    for (int64_t c = 0; c < g.d; c += kRows) {
      const __mmask32 m = avx512::lanes(g.d - c);
      const __m512i first = _mm512_maskz_loadu_epi16(m, a + c);
      const __m512i next = _mm512_maskz_loadu_epi16(second ? m : __mmask32{0}, a + stride + c);
      const __mmask32 pairs =
          g.d - c >= kRows ? ~__mmask32{0} : static_cast<__mmask32>((1u << (2 * (g.d - c))) - 1u);
      _mm512_mask_storeu_epi16(out + (j / 2) * 2 * g.dn + 2 * c, pairs,
                               _mm512_maskz_permutex2var_epi16(~__mmask32{0}, first, order, next));
    }
  }
}

// Writes (or adds) factor * rows[j][c] (FP32, ld) as bfloat16 into the head
// at `dst`, tokens `stride` apart, for `count` tokens.
TR_TILES void write_rows(const float* rows, int64_t ld, int64_t count, int64_t d, float factor,
                         uint16_t* dst, int64_t stride, bool accumulate) {
  const __m512 f = _mm512_set1_ps(factor);
  for (int64_t j = 0; j < count; ++j)
    for (int64_t c = 0; c < d; c += kRows) {
      const __mmask16 m = avx512::lanes(d - c);
      uint16_t* to = dst + j * stride + c;
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, rows + j * ld + c), f);
      if (accumulate) v = _mm512_add_ps(avx512::widen(to, m), v);
      _mm256_mask_storeu_epi16(to, m, avx512::narrow(v));
    }
}

// The same from a transposed_head source, rows_t[c][j] (ld): a gather a token.
TR_TILES void write_transposed(const float* rows_t, int64_t ld, const TileGeometry& g, float factor,
                               uint16_t* dst, int64_t stride, bool accumulate) {
  const __m512 f = _mm512_set1_ps(factor);
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  for (int64_t c = 0; c < g.d; c += kRows) {
    const __mmask16 m = avx512::lanes(g.d - c);
    const __m512i at =
        _mm512_mullo_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int>(c))),
                           _mm512_set1_epi32(static_cast<int>(ld)));
    for (int64_t j = 0; j < g.t; ++j) {
      uint16_t* to = dst + j * stride + c;
      __m512 v =
          _mm512_mul_ps(_mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, at, rows_t + j, 4), f);
      if (accumulate) v = _mm512_add_ps(avx512::widen(to, m), v);
      _mm256_mask_storeu_epi16(to, m, avx512::narrow(v));
    }
  }
}

// A thread's buffer, carved into bfloat16 and FP32 arrays of whole cache lines.
class Carve {
 public:
  Carve(std::vector<float>& storage, int64_t floats) : storage_(storage) {
    storage_.assign(static_cast<size_t>(floats + 16), 0.0f);
  }
  uint16_t* bf16(int64_t count) { return reinterpret_cast<uint16_t*>(take((count + 1) / 2)); }
  float* f32(int64_t count) { return take(count); }

 private:
  float* take(int64_t floats) {
    float* p = storage_.data() + used_;
    used_ += round_up(floats, 16);
    return p;
  }
  std::vector<float>& storage_;
  int64_t used_ = 0;
};

// ---- forward ------------------------------------------------------------------

struct ForwardBuffers {
  uint16_t *kp, *vp, *q, *p;
  float *s, *o;
  static int64_t floats(const TileGeometry& g) {
    return g.dk * g.tk / 2 + g.tk * g.dn / 2 + g.tk * g.dk / 2 + kQueryBlock * g.tk / 2 +
           kQueryBlock * g.tk + kQueryBlock * g.dn + 6 * 16;
  }
  ForwardBuffers(Carve& b, const TileGeometry& g)
      : kp(b.bf16(g.dk * g.tk)),
        vp(b.bf16(g.tk * g.dn)),
        q(b.bf16(g.tk * g.dk)),
        p(b.bf16(kQueryBlock * g.tk)),
        s(b.f32(kQueryBlock * g.tk)),
        o(b.f32(kQueryBlock * g.dn)) {}
};

// One query row's softmax: s (FP32 products q . k) -> p (bfloat16, kept
// probabilities, zero past the tokens); gives the scaled scores' maximum and
// the probabilities' sum. The scale is positive, so the largest product
// gives the largest score.
TR_TILES void softmax_row(const float* s, const TileGeometry& g, const detail::AttentionDrop& drop,
                          uint32_t key, uint32_t index, uint16_t* p, float& max, float& sum) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < g.t; j += kRows)
    m = _mm512_mask_max_ps(m, avx512::lanes(g.t - j), m, _mm512_loadu_ps(s + j));
  max = avx512::lane_max(m) * g.scale;
  const __m512 scale = _mm512_set1_ps(g.scale), shift = _mm512_set1_ps(max);
  __m512 total = _mm512_setzero_ps();
  for (int64_t j = 0; j < g.tk; j += kRows) {
    const __mmask16 k = avx512::lanes(g.t - j);
    __m512 e = _mm512_maskz_mov_ps(
        k, avx512::exp16(_mm512_fmsub_ps(_mm512_loadu_ps(s + j), scale, shift)));
    total = _mm512_add_ps(total, e);
    if (drop.on && k) e = _mm512_mul_ps(e, keep16(drop, key, index + static_cast<uint32_t>(j)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + j), avx512::narrow(e));
  }
  sum = avx512::lane_sum(total);
}

TR_TILES void tile_forward_pair(const uint16_t* qkv, const TileGeometry& g, int64_t n, int64_t h,
                                const detail::AttentionDrop& drop, const ForwardBuffers& b,
                                uint16_t* o, float* lse) {
  const int64_t stride = 3 * g.c;
  const uint32_t key = drop.on ? drop.key(n, h, g.heads) : 0;
  copy_rows(g.head(qkv, n, h, 0), stride, g, b.q, g.dk);
  channel_pairs(g.head(qkv, n, h, 1), stride, g, b.kp);
  token_pairs(g.head(qkv, n, h, 2), stride, g, b.vp);
  for (int64_t i0 = 0; i0 < g.t; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, g.t - i0);
    const int64_t bm = round_up(rows, kDepth);  // the block's rows, padded
    tile_product(bm, g.tk, g.dk, b.q + i0 * g.dk, g.dk, b.kp, 2 * g.tk, b.s, g.tk, false);
    alignas(64) float max[kQueryBlock] = {}, sum[kQueryBlock];
    std::fill_n(sum, kQueryBlock, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      softmax_row(b.s + r * g.tk, g, drop, key, static_cast<uint32_t>((i0 + r) * g.t),
                  b.p + r * g.tk, max[r], sum[r]);
    // Rows past the tokens weigh nothing; their sums are never read.
    std::memset(b.p + rows * g.tk, 0, static_cast<size_t>((bm - rows) * g.tk) * 2);
    tile_product(bm, g.dn, g.tk, b.p, g.tk, b.vp, 2 * g.dn, b.o, g.dn, false);
    alignas(64) float inverse[kQueryBlock];
    for (int64_t r = 0; r < bm; r += kRows) {
      const __m512 l = _mm512_load_ps(sum + r);
      _mm512_store_ps(inverse + r, _mm512_div_ps(_mm512_set1_ps(1.0f), l));
      if (lse) _mm512_store_ps(sum + r, _mm512_add_ps(_mm512_load_ps(max + r), avx512::log16(l)));
    }
    uint16_t* out = o + (n * g.t + i0) * g.c + h * g.d;
    for (int64_t r = 0; r < rows; ++r) {
      write_rows(b.o + r * g.dn, g.dn, 1, g.d, inverse[r], out + r * g.c, g.c, false);
      if (lse) lse[(n * g.t + i0 + r) * g.heads + h] = sum[r];
    }
  }
}

// ---- backward -----------------------------------------------------------------

struct BackwardBuffers {
  uint16_t *kp, *vp, *kt, *q, *go, *qt, *got, *dsr, *dsp, *pp;
  float *s, *dp, *dkt, *dvt, *dq;
  static int64_t floats(const TileGeometry& g) {
    return (2 * g.dk * g.tk + g.tk * g.dn + 2 * g.tk * g.dk + 2 * g.dn * g.tk +
            3 * kQueryBlock * g.tk) /
               2 +
           2 * kQueryBlock * g.tk + 2 * g.dn * g.tk + kQueryBlock * g.dn + 15 * 16;
  }
  BackwardBuffers(Carve& b, const TileGeometry& g)
      : kp(b.bf16(g.dk * g.tk)),
        vp(b.bf16(g.dk * g.tk)),
        kt(b.bf16(g.tk * g.dn)),
        q(b.bf16(g.tk * g.dk)),
        go(b.bf16(g.tk * g.dk)),
        qt(b.bf16(g.dn * g.tk)),
        got(b.bf16(g.dn * g.tk)),
        dsr(b.bf16(kQueryBlock * g.tk)),
        dsp(b.bf16(kQueryBlock * g.tk)),
        pp(b.bf16(kQueryBlock * g.tk)),
        s(b.f32(kQueryBlock * g.tk)),
        dp(b.f32(kQueryBlock * g.tk)),
        dkt(b.f32(g.dn * g.tk)),
        dvt(b.f32(g.dn * g.tk)),
        dq(b.f32(kQueryBlock * g.dn)) {}
};

// do . o of one query, in FP32 from the bfloat16 rows.
TR_TILES float row_dot(const uint16_t* a, const uint16_t* b, int64_t d) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < d; c += kRows) {
    const __mmask16 m = avx512::lanes(d - c);
    acc = _mm512_fmadd_ps(avx512::widen(a + c, m), avx512::widen(b + c, m), acc);
  }
  return avx512::lane_sum(acc);
}

// One query's part of the backward: its log-sum-exp and do . o, and per 16
// keys its scores' gradients and kept probabilities from the recomputed
// products (zero for a query past the tokens and for keys past them).
struct QueryRow {
  bool valid = false;
  float lse = 0.0f, delta = 0.0f;
  uint32_t index = 0;  // query * tokens, for the dropout draws
  uint32_t key = 0;    // the pair's dropout key

  TR_TILES void grads(const float* s, const float* dp, int64_t j, const TileGeometry& g,
                      const detail::AttentionDrop& drop, __m512& ds, __m512& kept) const {
    if (!valid) {
      ds = kept = _mm512_setzero_ps();
      return;
    }
    const __mmask16 k = avx512::lanes(g.t - j);
    const __m512 pv = _mm512_maskz_mov_ps(
        k, avx512::exp16(
               _mm512_fmsub_ps(_mm512_loadu_ps(s), _mm512_set1_ps(g.scale), _mm512_set1_ps(lse))));
    __m512 gv = _mm512_loadu_ps(dp);
    kept = pv;
    if (drop.on && k) {
      const __m512 f = keep16(drop, key, index + static_cast<uint32_t>(j));
      gv = _mm512_mul_ps(gv, f);
      kept = _mm512_mul_ps(pv, f);
    }
    ds = _mm512_mul_ps(pv, _mm512_sub_ps(gv, _mm512_set1_ps(delta)));
  }
};

TR_TILES QueryRow query_row(const TileGeometry& g, int64_t i, bool valid, int64_t n, int64_t h,
                            const float* lse, const uint16_t* go, const uint16_t* o,
                            const detail::AttentionDrop& drop, uint32_t key) {
  QueryRow q;
  q.valid = valid;
  if (!valid) return q;
  q.lse = lse[(n * g.t + i) * g.heads + h];
  q.delta = row_dot(go + i * g.c, o + (n * g.t + i) * g.c + h * g.d, g.d);
  q.index = static_cast<uint32_t>(i * g.t);
  q.key = drop.on ? key : 0;
  return q;
}

TR_TILES void tile_backward_pair(const uint16_t* qkv, const uint16_t* o, const float* lse,
                                 const uint16_t* dout, const TileGeometry& g, int64_t n, int64_t h,
                                 const detail::AttentionDrop& drop, const BackwardBuffers& b,
                                 uint16_t* dqkv, bool accumulate) {
  const int64_t stride = 3 * g.c;
  const uint32_t key = drop.on ? drop.key(n, h, g.heads) : 0;
  const uint16_t* q = g.head(qkv, n, h, 0);
  const uint16_t* go = dout + n * g.t * g.c + h * g.d;
  copy_rows(q, stride, g, b.q, g.dk);
  copy_rows(go, g.c, g, b.go, g.dk);
  transposed_head(q, stride, g, b.qt);
  transposed_head(go, g.c, g, b.got);
  channel_pairs(g.head(qkv, n, h, 1), stride, g, b.kp);
  channel_pairs(g.head(qkv, n, h, 2), stride, g, b.vp);
  token_pairs(g.head(qkv, n, h, 1), stride, g, b.kt);
  for (int64_t i0 = 0; i0 < g.t; i0 += kQueryBlock) {
    const int64_t rows = std::min(kQueryBlock, g.t - i0);
    const int64_t bm = round_up(rows, kDepth);  // the block's rows, padded
    tile_product(bm, g.tk, g.dk, b.q + i0 * g.dk, g.dk, b.kp, 2 * g.tk, b.s, g.tk, false);
    tile_product(bm, g.tk, g.dk, b.go + i0 * g.dk, g.dk, b.vp, 2 * g.tk, b.dp, g.tk, false);
    // Two queries at a time, straight into the products' operands: the
    // scores' gradients as rows (dq's) and both as pairs of rows over the
    // queries (dk's and dv's); queries past the tokens give zeros.
    for (int64_t r = 0; r < bm; r += 2) {
      QueryRow q0 = query_row(g, i0 + r, r < rows, n, h, lse, go, o, drop, key);
      QueryRow q1 = query_row(g, i0 + r + 1, r + 1 < rows, n, h, lse, go, o, drop, key);
      for (int64_t j = 0; j < g.tk; j += kRows) {
        __m512 ds0, kept0, ds1, kept1;
        q0.grads(b.s + r * g.tk + j, b.dp + r * g.tk + j, j, g, drop, ds0, kept0);
        q1.grads(b.s + (r + 1) * g.tk + j, b.dp + (r + 1) * g.tk + j, j, g, drop, ds1, kept1);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.dsr + r * g.tk + j), avx512::narrow(ds0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.dsr + (r + 1) * g.tk + j),
                            avx512::narrow(ds1));
        _mm512_storeu_si512(b.dsp + r * g.tk + 2 * j, interleave(ds0, ds1));
        _mm512_storeu_si512(b.pp + r * g.tk + 2 * j, interleave(kept0, kept1));
      }
    }
    // dvᵀ += doᵀ p, dkᵀ += qᵀ ds over this block's queries; dq = ds k.
    tile_product(g.dn, g.tk, bm, b.got + i0, g.tk, b.pp, 2 * g.tk, b.dvt, g.tk, i0 > 0);
    tile_product(g.dn, g.tk, bm, b.qt + i0, g.tk, b.dsp, 2 * g.tk, b.dkt, g.tk, i0 > 0);
    tile_product(bm, g.dn, g.tk, b.dsr, g.tk, b.kt, 2 * g.dn, b.dq, g.dn, false);
    write_rows(b.dq, g.dn, rows, g.d, g.scale, dqkv + (n * g.t + i0) * stride + h * g.d, stride,
               accumulate);
  }
  uint16_t* dk = dqkv + n * g.t * stride + g.c + h * g.d;
  write_transposed(b.dkt, g.tk, g, g.scale, dk, stride, accumulate);
  write_transposed(b.dvt, g.tk, g, 1.0f, dk + g.c, stride, accumulate);
}

// Runs body(n, h, carve) for every (sample, head) pair, the pairs split
// over the threads, each with its tiles configured and a zeroed buffer of
// `floats` (the operands' padding stays zero: every pair writes the same
// places).
template <class Body>
void for_each_tile_pair(const TileGeometry& g, int64_t work, int64_t floats, Body body) {
  detail::parallel_ranges(g.n * g.heads, work, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<float> storage;
    Carve carve(storage, floats);
    configure_tiles();
    body(lo, hi, carve);
    release_tiles();
  });
}

}  // namespace

bool matrix_tiles_usable() noexcept {
  static const bool usable = [] {
    if (!native_bf16_usable() || !detect_cpu_bf16().amx_bf16) return false;
    // Linux (5.16 on) hands out the tile data state to a process that asks
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first
    // tile instruction faults.
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }();
  return usable;
}

bool tile_attention_takes(const KernelArgs& a) {
  // The forward gives o, and lse when training; the backward takes qkv, o, lse, do.
  return detail::compact_operands(a, 1, 1, {0}, {0}) ||
         detail::compact_operands(a, 1, 2, {0}, {0}) ||
         detail::compact_operands(a, 4, 1, {0, 1, 3}, {0});
}

void tile_attention_fwd(const KernelArgs& a) {
  const TileGeometry g = tile_geometry(a);
  const auto* qkv = static_cast<const uint16_t*>(a.in[0].data);
  auto* o = static_cast<uint16_t*>(a.out[0].data);
  float* lse = detail::has_out(a, 1) ? a.out[1].f32() : nullptr;
  const detail::AttentionDrop drop = detail::attention_drop(a, g.n, lse != nullptr);
  const int64_t work = g.n * g.heads * g.t * g.t * g.d;
  for_each_tile_pair(g, work, ForwardBuffers::floats(g), [&](int64_t lo, int64_t hi, Carve& carve) {
    const ForwardBuffers b(carve, g);
    for (int64_t pair = lo; pair < hi; ++pair)
      tile_forward_pair(qkv, g, pair / g.heads, pair % g.heads, drop, b, o, lse);
  });
}

void tile_attention_bwd(const KernelArgs& a) {
  if (!detail::has_out(a, 0)) return;
  const TileGeometry g = tile_geometry(a);
  const auto* qkv = static_cast<const uint16_t*>(a.in[0].data);
  const auto* o = static_cast<const uint16_t*>(a.in[1].data);
  const float* lse = a.in[2].f32();
  const auto* dout = static_cast<const uint16_t*>(a.in[3].data);
  auto* dqkv = static_cast<uint16_t*>(a.out[0].data);
  const bool accumulate = a.accumulate(0);
  const detail::AttentionDrop drop = detail::attention_drop(a, g.n, true);
  const int64_t work = g.n * g.heads * g.t * g.t * g.d * 2;
  for_each_tile_pair(g, work, BackwardBuffers::floats(g),
                     [&](int64_t lo, int64_t hi, Carve& carve) {
                       const BackwardBuffers b(carve, g);
                       for (int64_t pair = lo; pair < hi; ++pair)
                         tile_backward_pair(qkv, o, lse, dout, g, pair / g.heads, pair % g.heads,
                                            drop, b, dqkv, accumulate);
                     });
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// FP16 <-> FP32 arrays: an F16C path chosen at run time, a portable one, and
// the row split between threads.
#include "backends/cpu/kernels/half_arrays.h"

#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/kernels/conversion_split.h"
#include "backends/cpu/kernels/half_convert.h"

namespace tr::cpu {

namespace {

// ---- portable -------------------------------------------------------------

constexpr auto widen_flat_half_portable = &detail::widen_flat_portable<&half_bits_to_float>;
constexpr auto narrow_flat_half_portable = &detail::narrow_flat_portable<&float_to_half_bits>;
constexpr auto widen_rows_half_portable = &detail::widen_rows_portable<&half_bits_to_float>;
constexpr auto narrow_rows_half_portable = &detail::narrow_rows_portable<&float_to_half_bits>;

// ---- F16C -----------------------------------------------------------------
// Compiled for AVX2 + F16C only here and called only when the CPU has both,
// so the rest of the engine keeps the baseline x86-64 target.

#define TR_F16C __attribute__((target("avx2,f16c")))

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Lanes [0, m) of 8 (or 4) active, for the masked loads and stores of a row's tail.
TR_F16C inline __m256i mask8(int64_t m) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(m)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TR_F16C inline __m128i mask4(int64_t m) {
  return _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(m)), _mm_setr_epi32(0, 1, 2, 3));
}

TR_F16C void widen_flat_f16c(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  widen_flat_half_portable(in + i, out + i, n - i);
}

TR_F16C void narrow_flat_f16c(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound));
  narrow_flat_half_portable(in + i, out + i, n - i);
}

// A padded stride is a multiple of 8 (features, gradient slots) or of 4
// (input buffers): whole groups of lanes are read and written on the FP16
// side, never past the row. On the compact FP32 side a row's last group
// spills into the next row, which is harmless while the next row is still
// to come (its own access overwrites or ignores the spill); only near the
// end of the range do masked loads and stores keep inside it (on AMD they
// cost ~10x a plain one, so they are kept off the common path).
TR_F16C void widen_rows8_f16c(const uint16_t* in, int64_t stride, float* out, int64_t rows,
                              int64_t c) {
  const int64_t full = c / 8 * 8, end = rows * c;
  const __m256i tail = mask8(c - full);
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* src = in + r * stride;
    float* dst = out + r * c;
    int64_t k = 0;
    for (; k < full; k += 8)
      _mm256_storeu_ps(dst + k,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k))));
    if (k == c) continue;
    const __m256 v = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k)));
    if (r * c + k + 8 <= end)
      _mm256_storeu_ps(dst + k, v);
    else
      _mm256_maskstore_ps(dst + k, tail, v);
  }
}

TR_F16C void widen_rows4_f16c(const uint16_t* in, int64_t stride, float* out, int64_t rows,
                              int64_t c) {
  const int64_t full = c / 4 * 4, end = rows * c;
  const __m128i tail = mask4(c - full);
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* src = in + r * stride;
    float* dst = out + r * c;
    int64_t k = 0;
    for (; k < full; k += 4)
      _mm_storeu_ps(dst + k,
                    _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + k))));
    if (k == c) continue;
    const __m128 v = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + k)));
    if (r * c + k + 4 <= end)
      _mm_storeu_ps(dst + k, v);
    else
      _mm_maskstore_ps(dst + k, tail, v);
  }
}

TR_F16C void narrow_rows8_f16c(const float* in, uint16_t* out, int64_t stride, int64_t rows,
                               int64_t c) {
  const int64_t full = c / 8 * 8, end = rows * c;
  const __m256i tail = mask8(c - full);
  const __m128i zero = _mm_setzero_si128();
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = in + r * c;
    uint16_t* dst = out + r * stride;
    int64_t k = 0;
    for (; k < full; k += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k),
                       _mm256_cvtps_ph(_mm256_loadu_ps(src + k), kRound));
    if (k < c) {
      // Lanes past the row become +0, the padding's value.
      const __m256 v = r * c + k + 8 <= end
                           ? _mm256_and_ps(_mm256_loadu_ps(src + k), _mm256_castsi256_ps(tail))
                           : _mm256_maskload_ps(src + k, tail);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), _mm256_cvtps_ph(v, kRound));
      k += 8;
    }
    for (; k < stride; k += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k), zero);
  }
}

TR_F16C void narrow_rows4_f16c(const float* in, uint16_t* out, int64_t stride, int64_t rows,
                               int64_t c) {
  const int64_t full = c / 4 * 4, end = rows * c;
  const __m128i tail = mask4(c - full);
  const __m128i zero = _mm_setzero_si128();
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = in + r * c;
    uint16_t* dst = out + r * stride;
    int64_t k = 0;
    for (; k < full; k += 4)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + k),
                       _mm_cvtps_ph(_mm_loadu_ps(src + k), kRound));
    if (k < c) {
      const __m128 v = r * c + k + 4 <= end
                           ? _mm_and_ps(_mm_loadu_ps(src + k), _mm_castsi128_ps(tail))
                           : _mm_maskload_ps(src + k, tail);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + k), _mm_cvtps_ph(v, kRound));
      k += 4;
    }
    for (; k < stride; k += 4) _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + k), zero);
  }
}

#undef TR_F16C

bool detect_f16c() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

}  // namespace

bool half_arrays_use_f16c() noexcept {
  static const bool fast = detect_f16c();
  return fast;
}

void widen_half(const uint16_t* in, float* out, int64_t n) {
  detail::convert_flat(in, out, n,
                       half_arrays_use_f16c() ? &widen_flat_f16c : widen_flat_half_portable);
}

void narrow_to_half(const float* in, uint16_t* out, int64_t n) {
  detail::convert_flat(in, out, n,
                       half_arrays_use_f16c() ? &narrow_flat_f16c : narrow_flat_half_portable);
}

void widen_half_rows(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c) {
  if (stride == c) return widen_half(in, out, rows * c);
  const bool fast = half_arrays_use_f16c();
  detail::widen_rows_split(in, stride, out, rows, c,
                           fast && stride % 8 == 0   ? &widen_rows8_f16c
                           : fast && stride % 4 == 0 ? &widen_rows4_f16c
                                                     : widen_rows_half_portable);
}

void narrow_to_half_rows(const float* in, uint16_t* out, int64_t stride, int64_t rows, int64_t c) {
  if (stride == c) return narrow_to_half(in, out, rows * c);
  const bool fast = half_arrays_use_f16c();
  detail::narrow_rows_split(in, out, stride, rows, c,
                            fast && stride % 8 == 0   ? &narrow_rows8_f16c
                            : fast && stride % 4 == 0 ? &narrow_rows4_f16c
                                                      : narrow_rows_half_portable);
}

}  // namespace tr::cpu

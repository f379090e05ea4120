// SPDX-License-Identifier: GPL-3.0-or-later
// 16-float vector helpers for the CPU kernels written for AVX-512 BF16
// (tile_attention.cpp, bf16_vector_kernels.cpp): bfloat16 loads and stores,
// fixed-order lane reductions, e^x and ln x with FMA. Compiled for those
// extensions function by function; only called where the CPU has them.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#define TR_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace tr::cpu::avx512 {

constexpr int64_t kLanes = 16;

TR_AVX512_BF16 inline __mmask16 lanes(int64_t m) {
  if (m <= 0) return 0;
  return m >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << m) - 1u);
}

// (The zero-masked forms throughout: GCC 12 warns that the unmasked ones'
// undefined pass-through may be used uninitialised.)
constexpr __mmask16 kAll = 0xFFFF;

TR_AVX512_BF16 inline __m512 widen(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
}

TR_AVX512_BF16 inline __m256i narrow(__m512 v) {
  const __m256bh h = _mm512_cvtneps_pbh(v);
  __m256i out;
  std::memcpy(&out, &h, sizeof out);
  return out;
}

// The lanes combined pairwise, halves first (8 + 8, 4 + 4, 2 + 2, 1 + 1):
// a fixed order, whatever the build.
TR_AVX512_BF16 inline float lane_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(kAll, v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(kAll, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}

TR_AVX512_BF16 inline float lane_max(__m512 v) {
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_shuffle_f32x4(kAll, v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_shuffle_f32x4(kAll, v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_permute_ps(kAll, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_maskz_max_ps(kAll, v, _mm512_maskz_permute_ps(kAll, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}

// e^x: Cody-Waite reduction by ln 2, a degree-6 polynomial, 2^n by VSCALEFPS.
// Arguments below -87 give e^-87; NaN stays NaN.
TR_AVX512_BF16 inline __m512 exp16(__m512 x) {
  x = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-87.0f), x);
  const __m512 n =
      _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// ln x for positive normal x: x = 2^e m, m in [1, 2); ln m = 2 atanh(t),
// t = (m - 1) / (m + 1) in [0, 1/3), by its odd series to t^13.
TR_AVX512_BF16 inline __m512 log16(__m512 x) {
  const __m512 e = _mm512_maskz_getexp_ps(kAll, x);
  const __m512 m = _mm512_maskz_getmant_ps(kAll, x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_src);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(_mm512_sub_ps(m, one), _mm512_add_ps(m, one));
  const __m512 t2 = _mm512_mul_ps(t, t);
  __m512 p = _mm512_set1_ps(2.0f / 13.0f);
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f / 11.0f));
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f / 9.0f));
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f / 7.0f));
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f / 5.0f));
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f / 3.0f));
  p = _mm512_fmadd_ps(p, t2, _mm512_set1_ps(2.0f));
  return _mm512_fmadd_ps(e, _mm512_set1_ps(0.693147180559945309f), _mm512_mul_ps(p, t));
}

}  // namespace tr::cpu::avx512

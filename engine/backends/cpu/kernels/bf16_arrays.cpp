// SPDX-License-Identifier: GPL-3.0-or-later
// bfloat16 <-> FP32 arrays: an AVX-512 BF16 path chosen at run time, a
// portable one, and the row split between threads.
#include "backends/cpu/kernels/bf16_arrays.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/conversion_split.h"
#include "core/bf16_convert.h"

namespace tr::cpu {

namespace {

// ---- portable -------------------------------------------------------------

constexpr auto widen_flat_bf16_portable = &detail::widen_flat_portable<&bf16_bits_to_float>;
constexpr auto narrow_flat_bf16_portable = &detail::narrow_flat_portable<&float_to_bf16_bits>;
constexpr auto widen_rows_bf16_portable = &detail::widen_rows_portable<&bf16_bits_to_float>;
constexpr auto narrow_rows_bf16_portable = &detail::narrow_rows_portable<&float_to_bf16_bits>;

// ---- AVX-512 BF16 -----------------------------------------------------------
// Compiled for these extensions only here and called only when the CPU has
// them all, so the rest of the engine keeps the baseline x86-64 target. Masked
// loads and stores keep every access inside its row, tails included.

#define TR_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// Lanes [0, m) of 16 active (none for m <= 0).
TR_BF16 inline __mmask16 lanes(int64_t m) {
  if (m <= 0) return 0;
  return m >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << m) - 1u);
}

// (The zero-masked forms: GCC 12 warns that the unmasked ones' undefined
// pass-through may be used uninitialised.)
TR_BF16 inline void widen16(const uint16_t* in, float* out, __mmask16 m) {
  const __m512i w = _mm512_maskz_slli_epi32(
      m, _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, in)), 16);
  _mm512_mask_storeu_ps(out, m, _mm512_castsi512_ps(w));
}

// Lanes of `load` from `in` (the others +0), 16 values narrowed, lanes of
// `store` written.
TR_BF16 inline void narrow16(const float* in, uint16_t* out, __mmask16 load, __mmask16 store) {
  const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(load, in));
  __m256i bits;
  static_assert(sizeof bits == sizeof b);
  std::memcpy(&bits, &b, sizeof bits);
  _mm256_mask_storeu_epi16(out, store, bits);
}

TR_BF16 void widen_flat_avx512(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) widen16(in + i, out + i, lanes(n - i));
}

TR_BF16 void narrow_flat_avx512(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes(n - i);
    narrow16(in + i, out + i, m, m);
  }
}

TR_BF16 void widen_rows_avx512(const uint16_t* in, int64_t stride, float* out, int64_t rows,
                               int64_t c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < c; k += 16) widen16(in + r * stride + k, out + r * c + k, lanes(c - k));
}

// The padding lanes come out as +0: the loads past the row's values are masked off.
TR_BF16 void narrow_rows_avx512(const float* in, uint16_t* out, int64_t stride, int64_t rows,
                                int64_t c) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < stride; k += 16)
      narrow16(in + r * c + k, out + r * stride + k, lanes(c - k), lanes(stride - k));
}

#undef TR_BF16

bool detect_avx512_bf16() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
}

}  // namespace

bool bf16_arrays_use_avx512() noexcept {
  static const bool fast = detect_avx512_bf16();
  return fast;
}

void widen_bf16(const uint16_t* in, float* out, int64_t n) {
  detail::convert_flat(in, out, n,
                       bf16_arrays_use_avx512() ? &widen_flat_avx512 : widen_flat_bf16_portable);
}

void narrow_to_bf16(const float* in, uint16_t* out, int64_t n) {
  detail::convert_flat(in, out, n,
                       bf16_arrays_use_avx512() ? &narrow_flat_avx512 : narrow_flat_bf16_portable);
}

void widen_bf16_rows(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c) {
  if (stride == c) return widen_bf16(in, out, rows * c);
  detail::widen_rows_split(
      in, stride, out, rows, c,
      bf16_arrays_use_avx512() ? &widen_rows_avx512 : widen_rows_bf16_portable);
}

void narrow_to_bf16_rows(const float* in, uint16_t* out, int64_t stride, int64_t rows, int64_t c) {
  if (stride == c) return narrow_to_bf16(in, out, rows * c);
  detail::narrow_rows_split(
      in, out, stride, rows, c,
      bf16_arrays_use_avx512() ? &narrow_rows_avx512 : narrow_rows_bf16_portable);
}

}  // namespace tr::cpu

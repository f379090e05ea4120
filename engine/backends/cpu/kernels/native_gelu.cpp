// SPDX-License-Identifier: GPL-3.0-or-later
// GELU on bfloat16 features with AVX-512 BF16 and FMA (native_bf16.h):
// x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 as PyTorch computes it, erf
// by Abramowitz and Stegun's 7.1.26, whose e^(-z^2) is also the backward's
// normal density. 16 values a step, elementwise, split over the threads.
#include <cstdint>

#include "backends/cpu/kernels/avx512_bf16_math.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/parallel.h"
#include "compile/node_params.h"

namespace tr::cpu {

namespace {

using avx512::kLanes;

// Phi(x), and the standard normal density at x in `density`.
TR_AVX512_BF16 inline __m512 normal_cdf(__m512 x, __m512& density) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  // 1 / (1 + p z): the reciprocal estimate and one Newton step.
  const __m512 den = _mm512_fmadd_ps(z, _mm512_set1_ps(0.3275911f), _mm512_set1_ps(1.0f));
  __m512 t = _mm512_maskz_rcp14_ps(avx512::kAll, den);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(den, t, _mm512_set1_ps(2.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  const __m512 e = avx512::exp16(_mm512_mul_ps(_mm512_mul_ps(z, z), _mm512_set1_ps(-1.0f)));
  density = _mm512_mul_ps(e, _mm512_set1_ps(0.39894228040143268f));
  // erfc(|x| / sqrt 2) / 2, then Phi by the sign of x.
  const __m512 tail = _mm512_mul_ps(_mm512_mul_ps(p, t), _mm512_mul_ps(e, _mm512_set1_ps(0.5f)));
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mov_ps(_mm512_sub_ps(_mm512_set1_ps(1.0f), tail), negative, tail);
}

TR_AVX512_BF16 void gelu_range(const uint16_t* x, uint16_t* y, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += kLanes) {
    const __mmask16 l = avx512::lanes(hi - i);
    const __m512 v = avx512::widen(x + i, l);
    __m512 density;
    _mm256_mask_storeu_epi16(y + i, l, avx512::narrow(_mm512_mul_ps(v, normal_cdf(v, density))));
  }
}

// dx (+)= dy (Phi(x) + x phi(x))
TR_AVX512_BF16 void gelu_grad_range(const uint16_t* x, const uint16_t* dy, uint16_t* dx,
                                    bool accumulate, int64_t lo, int64_t hi) {
  for (int64_t i = lo; i < hi; i += kLanes) {
    const __mmask16 l = avx512::lanes(hi - i);
    const __m512 v = avx512::widen(x + i, l);
    __m512 density;
    const __m512 cdf = normal_cdf(v, density);
    __m512 g = _mm512_mul_ps(avx512::widen(dy + i, l), _mm512_fmadd_ps(v, density, cdf));
    if (accumulate) g = _mm512_add_ps(avx512::widen(dx + i, l), g);
    _mm256_mask_storeu_epi16(dx + i, l, avx512::narrow(g));
  }
}

// Elementwise cost per value in the threads' split, about our own GELU's.
constexpr int64_t kCost = 16;
// Ranges start on whole cache lines of bfloat16.
constexpr int64_t kLine = 32;

}  // namespace

bool native_gelu_takes(const KernelArgs& a) {
  if (a.params().activation != Activation::GELU) return false;
  if (a.in.size() == 1) return detail::compact_operands(a, 1, 1, {0}, {0});
  return detail::compact_operands(a, 2, 1, {0, 1}, {0});
}

void native_gelu_fwd(const KernelArgs& a) {
  const auto* x = static_cast<const uint16_t*>(a.in[0].data);
  auto* y = static_cast<uint16_t*>(a.out[0].data);
  const int64_t n = a.in[0].shape().elements();
  detail::parallel_ranges(
      n, n * kCost, [&](int64_t lo, int64_t hi) { gelu_range(x, y, lo, hi); }, kLine);
}

void native_gelu_bwd(const KernelArgs& a) {
  if (!detail::has_out(a, 0)) return;
  const auto* x = static_cast<const uint16_t*>(a.in[0].data);
  const auto* dy = static_cast<const uint16_t*>(a.in[1].data);
  auto* dx = static_cast<uint16_t*>(a.out[0].data);
  const bool acc = a.accumulate(0);
  const int64_t n = a.in[1].shape().elements();
  detail::parallel_ranges(
      n, n * kCost, [&](int64_t lo, int64_t hi) { gelu_grad_range(x, dy, dx, acc, lo, hi); },
      kLine);
}

}  // namespace tr::cpu

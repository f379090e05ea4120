// SPDX-License-Identifier: GPL-3.0-or-later
// LayerNorm on bfloat16 rows with AVX-512 BF16 and FMA (native_bf16.h). A
// row is widened once into the thread's buffer; its mean and variance are
// two FP32 passes over it (the deviations' squares about the mean, so a
// large mean does not cancel the variance), each summed lane-wise and then
// in one fixed tree. Rows split over the threads as they come; the scale's
// and shift's gradients sum in parts fixed by the row count (parallel.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels/avx512_bf16_math.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/norm_part_sums.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

namespace {

using avx512::kLanes;

float* row_buffer(int64_t floats) {
  thread_local std::vector<float> rows;
  if (rows.size() < static_cast<size_t>(floats)) rows.resize(static_cast<size_t>(floats));
  return rows.data();
}

// Widens row x (c bfloat16) into buf, zero past c up to whole vectors;
// returns the row's sum.
TR_AVX512_BF16 float widen_row(const uint16_t* x, int64_t c, float* buf) {
  __m512 s = _mm512_setzero_ps();
  for (int64_t k = 0; k < c; k += kLanes) {
    const __m512 v = avx512::widen(x + k, avx512::lanes(c - k));
    _mm512_storeu_ps(buf + k, v);
    s = _mm512_add_ps(s, v);
  }
  return avx512::lane_sum(s);
}

TR_AVX512_BF16 void normalise_rows(const KernelArgs& a, int64_t lo, int64_t hi) {
  const int64_t c = a.in[0].shape().c;
  const auto* x = static_cast<const uint16_t*>(a.in[0].data);
  const float* gamma = a.in[1].f32();
  const float* beta = a.in[2].f32();
  auto* y = static_cast<uint16_t*>(a.out[0].data);
  float* saved = detail::has_out(a, 1) ? a.out[1].f32() : nullptr;
  const double eps = a.params().eps;
  const float inv_c = 1.0f / static_cast<float>(c);
  float* buf = row_buffer(c + kLanes);
  for (int64_t r = lo; r < hi; ++r) {
    const float mean = widen_row(x + r * c, c, buf) * inv_c;
    const __m512 m = _mm512_set1_ps(mean);
    __m512 q = _mm512_setzero_ps();
    for (int64_t k = 0; k < c; k += kLanes) {
      const __m512 d = _mm512_maskz_sub_ps(avx512::lanes(c - k), _mm512_loadu_ps(buf + k), m);
      q = _mm512_fmadd_ps(d, d, q);
    }
    const double var = static_cast<double>(avx512::lane_sum(q) * inv_c);
    const auto inv_std = static_cast<float>(1.0 / std::sqrt(var + eps));
    const __m512 s = _mm512_set1_ps(inv_std);
    for (int64_t k = 0; k < c; k += kLanes) {
      const __mmask16 l = avx512::lanes(c - k);
      const __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(l, gamma + k), s);
      const __m512 v = _mm512_fmadd_ps(_mm512_sub_ps(_mm512_loadu_ps(buf + k), m), g,
                                       _mm512_maskz_loadu_ps(l, beta + k));
      _mm256_mask_storeu_epi16(y + r * c + k, l, avx512::narrow(v));
    }
    if (saved) {
      saved[2 * r] = mean;
      saved[2 * r + 1] = inv_std;
    }
  }
}

// Rows [lo, hi): dx, and into dgamma and dbeta (FP32, c each) their sums.
TR_AVX512_BF16 void normalise_rows_backward(const KernelArgs& a, int64_t lo, int64_t hi,
                                            float* dgamma, float* dbeta) {
  const int64_t c = a.in[0].shape().c;
  const auto* x = static_cast<const uint16_t*>(a.in[0].data);
  const float* gamma = a.in[1].f32();
  const float* saved = a.in[2].f32();
  const auto* dy = static_cast<const uint16_t*>(a.in[3].data);
  auto* dx = detail::has_out(a, 2) ? static_cast<uint16_t*>(a.out[2].data) : nullptr;
  const bool acc_dx = a.accumulate(2);
  const float inv_c = 1.0f / static_cast<float>(c);
  const int64_t cp = (c + kLanes - 1) / kLanes * kLanes;
  float* xhat = row_buffer(2 * cp);
  float* g = xhat + cp;
  for (int64_t r = lo; r < hi; ++r) {
    const __m512 mean = _mm512_set1_ps(saved[2 * r]);
    const __m512 inv_std = _mm512_set1_ps(saved[2 * r + 1]);
    __m512 sg = _mm512_setzero_ps(), sgx = _mm512_setzero_ps();
    for (int64_t k = 0; k < c; k += kLanes) {
      const __mmask16 l = avx512::lanes(c - k);
      const __m512 xh =
          _mm512_maskz_mul_ps(l, _mm512_sub_ps(avx512::widen(x + r * c + k, l), mean), inv_std);
      const __m512 d = avx512::widen(dy + r * c + k, l);
      const __m512 gv = _mm512_mul_ps(d, _mm512_maskz_loadu_ps(l, gamma + k));
      sg = _mm512_add_ps(sg, gv);
      sgx = _mm512_fmadd_ps(gv, xh, sgx);
      if (dgamma) {
        _mm512_mask_storeu_ps(dgamma + k, l,
                              _mm512_fmadd_ps(d, xh, _mm512_maskz_loadu_ps(l, dgamma + k)));
        _mm512_mask_storeu_ps(dbeta + k, l, _mm512_add_ps(d, _mm512_maskz_loadu_ps(l, dbeta + k)));
      }
      _mm512_storeu_ps(xhat + k, xh);
      _mm512_storeu_ps(g + k, gv);
    }
    if (!dx) continue;
    const __m512 mg = _mm512_set1_ps(avx512::lane_sum(sg) * inv_c);
    const __m512 mgx = _mm512_set1_ps(avx512::lane_sum(sgx) * inv_c);
    for (int64_t k = 0; k < c; k += kLanes) {
      const __mmask16 l = avx512::lanes(c - k);
      uint16_t* to = dx + r * c + k;
      // inv_std * (g - mean(g) - xhat * mean(g * xhat))
      __m512 v =
          _mm512_mul_ps(inv_std, _mm512_fnmadd_ps(_mm512_loadu_ps(xhat + k), mgx,
                                                  _mm512_sub_ps(_mm512_loadu_ps(g + k), mg)));
      if (acc_dx) v = _mm512_add_ps(avx512::widen(to, l), v);
      _mm256_mask_storeu_epi16(to, l, avx512::narrow(v));
    }
  }
}

}  // namespace

bool native_layer_norm_takes(const KernelArgs& a) {
  if (a.in.size() == 3) return detail::compact_operands(a, 3, 2, {0}, {0});
  return detail::compact_operands(a, 4, 3, {0, 3}, {2});
}

void native_layer_norm_fwd(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  const int64_t rows = s.n * s.h * s.w;
  detail::parallel_ranges(rows, rows * s.c * 3,
                          [&](int64_t lo, int64_t hi) { normalise_rows(a, lo, hi); });
}

void native_layer_norm_bwd(const KernelArgs& a) {
  using detail::has_out;
  if (!has_out(a, 0) && !has_out(a, 1) && !has_out(a, 2)) return;
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, rows = s.n * s.h * s.w;
  const bool want_params = has_out(a, 0) || has_out(a, 1);
  const int parts = detail::reduction_parts(rows, rows * c * 4);
  // Per part: dgamma's partial sums, then dbeta's.
  thread_local std::vector<float> partials;
  if (want_params) partials.assign(static_cast<size_t>(parts * 2 * c), 0.0f);
  float* const sums = partials.data();
  detail::for_each_part(rows, parts, [&](int p, int64_t lo, int64_t hi) {
    float* dgamma = want_params ? sums + static_cast<int64_t>(p) * 2 * c : nullptr;
    normalise_rows_backward(a, lo, hi, dgamma, dgamma ? dgamma + c : nullptr);
  });
  if (want_params) detail::write_part_sums(a, sums, parts, c);
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Column sums of a bfloat16 matrix with AVX-512 BF16 (native_bf16.h): a
// bias gradient, the sum of dy over its rows. Each thread takes whole
// vectors of columns and reads every row of them, 64 rows at a time into
// FP32 vector sums that are then added into double totals: one order,
// whatever the thread count.
#include <algorithm>

#include "backends/cpu/kernels/avx512_bf16_math.h"
#include "backends/cpu/kernels/native_bf16.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

namespace {

using avx512::kLanes;

constexpr int64_t kRowBlock = 64;
constexpr int kMaxVectors = 8;  // columns a pass holds in registers: 8 x 16

// Columns [c0, c0 + 16 Vectors) (the last vector up to `end`) of m's rows.
template <int Vectors>
TR_AVX512_BF16 void sum_columns(const uint16_t* m, int64_t rows, int64_t c, int64_t c0, int64_t end,
                                float* out) {
  __mmask16 mask[Vectors];
  for (int v = 0; v < Vectors; ++v) mask[v] = avx512::lanes(end - c0 - v * kLanes);
  double total[Vectors * kLanes] = {};
  for (int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    __m512 acc[Vectors];
    for (int v = 0; v < Vectors; ++v) acc[v] = _mm512_setzero_ps();
    const int64_t r1 = std::min(rows, r0 + kRowBlock);
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* row = m + r * c + c0;
      for (int v = 0; v < Vectors; ++v)
        acc[v] = _mm512_add_ps(acc[v], avx512::widen(row + v * kLanes, mask[v]));
    }
    for (int v = 0; v < Vectors; ++v) {
      float lanes[kLanes];
      _mm512_storeu_ps(lanes, acc[v]);
      for (int64_t l = 0; l < kLanes; ++l) total[v * kLanes + l] += lanes[l];
    }
  }
  for (int64_t j = 0; j < end - c0; ++j) out[c0 + j] = static_cast<float>(total[j]);
}

template <int Vectors = kMaxVectors>
void sum_column_group(int vectors, const uint16_t* m, int64_t rows, int64_t c, int64_t c0,
                      int64_t end, float* out) {
  if constexpr (Vectors > 1) {
    if (vectors < Vectors) return sum_column_group<Vectors - 1>(vectors, m, rows, c, c0, end, out);
  }
  sum_columns<Vectors>(m, rows, c, c0, end, out);
}

}  // namespace

void native_column_sums(const uint16_t* m, int64_t rows, int64_t c, float* out) {
  detail::parallel_ranges(
      c, 2 * rows * c,  // values widened and added
      [&](int64_t lo, int64_t hi) {
        for (int64_t c0 = lo; c0 < hi; c0 += kMaxVectors * kLanes) {
          const int64_t end = std::min(hi, c0 + kMaxVectors * kLanes);
          const int vectors = static_cast<int>((end - c0 + kLanes - 1) / kLanes);
          sum_column_group(vectors, m, rows, c, c0, end, out);
        }
      },
      kLanes);
}

}  // namespace tr::cpu

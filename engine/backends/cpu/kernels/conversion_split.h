// SPDX-License-Identifier: GPL-3.0-or-later
// How the 16-bit array conversions (half_arrays, bf16_arrays) split their work
// between the threads: flat spans in cache-line-aligned ranges, padded rows
// row by row. Each conversion only picks its per-range function.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu::detail {

// Conversions are a few cycles per value on top of streaming it.
inline constexpr int64_t kConvertCost = 2;

template <class In, class Out>
using FlatConversion = void (*)(const In* in, Out* out, int64_t n);
using WidenRows = void (*)(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c);
using NarrowRows = void (*)(const float* in, uint16_t* out, int64_t stride, int64_t rows,
                            int64_t c);

template <class In, class Out>
void convert_flat(const In* in, Out* out, int64_t n, FlatConversion<In, Out> f) {
  parallel_ranges(
      n, n * kConvertCost, [&](int64_t lo, int64_t hi) { f(in + lo, out + lo, hi - lo); }, 64);
}

inline void widen_rows_split(const uint16_t* in, int64_t stride, float* out, int64_t rows,
                             int64_t c, WidenRows f) {
  parallel_ranges(rows, rows * stride * kConvertCost, [&](int64_t lo, int64_t hi) {
    f(in + lo * stride, stride, out + lo * c, hi - lo, c);
  });
}

inline void narrow_rows_split(const float* in, uint16_t* out, int64_t stride, int64_t rows,
                              int64_t c, NarrowRows f) {
  parallel_ranges(rows, rows * stride * kConvertCost, [&](int64_t lo, int64_t hi) {
    f(in + lo * c, out + lo * stride, stride, hi - lo, c);
  });
}

}  // namespace tr::cpu::detail

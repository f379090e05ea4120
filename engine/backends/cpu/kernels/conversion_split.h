// SPDX-License-Identifier: GPL-3.0-or-later
// How the 16-bit array conversions (half_arrays, bf16_arrays) split their work
// between the threads: flat spans in cache-line-aligned ranges, padded rows
// row by row. Each conversion only picks its per-range function.
#pragma once

#include <algorithm>
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

// The portable conversions, one value at a time through a scalar conversion
// (half_convert.h, bf16_convert.h); the padding lanes of narrowed rows are +0.
template <float (*Widen)(uint16_t) noexcept>
void widen_flat_portable(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Widen(in[i]);
}

template <uint16_t (*Narrow)(float) noexcept>
void narrow_flat_portable(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = Narrow(in[i]);
}

template <float (*Widen)(uint16_t) noexcept>
void widen_rows_portable(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r) widen_flat_portable<Widen>(in + r * stride, out + r * c, c);
}

template <uint16_t (*Narrow)(float) noexcept>
void narrow_rows_portable(const float* in, uint16_t* out, int64_t stride, int64_t rows, int64_t c) {
  for (int64_t r = 0; r < rows; ++r) {
    uint16_t* o = out + r * stride;
    narrow_flat_portable<Narrow>(in + r * c, o, c);
    std::fill(o + c, o + stride, uint16_t{0});
  }
}

}  // namespace tr::cpu::detail

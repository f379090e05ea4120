// SPDX-License-Identifier: GPL-3.0-or-later
// The rows of compact features in FP32, for kernels that also run on
// bfloat16 storage: FP32 rows are handed over as they lie; bfloat16 ones a
// chunk at a time, widened into per-thread buffers that stay in cache (and
// outputs narrowed back) with the AVX-512 conversions of bf16_arrays.h.
// Against staging whole tensors (half_staging.h) this saves their FP32
// copies' trips through memory, and gives the same bits: widening is exact
// and each output is rounded once.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "core/bf16_convert.h"

namespace tr::cpu::detail {

// One element of float or bfloat16 (uint16_t bits) storage, widened exactly;
// and one stored, rounded once.
inline float load(const float* p, int64_t i) {
  return p[i];
}
inline float load(const uint16_t* p, int64_t i) {
  return bf16_bits_to_float(p[i]);
}
inline void store_value(float* p, int64_t i, float v) {
  p[i] = v;
}
inline void store_value(uint16_t* p, int64_t i, float v) {
  p[i] = float_to_bf16_bits(v);
}

// Values an FP32 chunk buffer holds (64 KB): an operation's buffers stay in
// L2 between the conversions and the arithmetic (half_staging.cpp's chunks
// use it too).
inline constexpr int64_t kChunkValues = 16384;

// Rows per chunk for rows of `c` values: a multiple of 4 (so loops unrolled
// by four rows group them as one pass over the range would) and about
// kChunkValues values.
inline int64_t chunk_rows(int64_t c) {
  return std::max<int64_t>(4, kChunkValues / std::max<int64_t>(c, 1) / 4 * 4);
}

// Calls body(in, out, rows) over rows [lo, hi) of row length c, where in and
// out hold FP32 pointers to the first row of each operand's span; rows of
// one call are c apart. Outputs are read first when `read_outputs` (to add
// onto them). For bfloat16 the rows must be compact (c values apart).
template <size_t NI, size_t NO, class Body>
void float_rows(int64_t lo, int64_t hi, int64_t c, const std::array<const float*, NI>& in,
                const std::array<float*, NO>& out, bool /*read_outputs*/, Body&& body) {
  std::array<const float*, NI> i;
  std::array<float*, NO> o;
  for (size_t k = 0; k < NI; ++k) i[k] = in[k] + lo * c;
  for (size_t k = 0; k < NO; ++k) o[k] = out[k] + lo * c;
  if (hi > lo) body(i, o, hi - lo);
}

template <size_t NI, size_t NO, class Body>
void float_rows(int64_t lo, int64_t hi, int64_t c, const std::array<const uint16_t*, NI>& in,
                const std::array<uint16_t*, NO>& out, bool read_outputs, Body&& body) {
  const int64_t chunk = chunk_rows(c);
  thread_local std::vector<float> buffer;
  buffer.resize(static_cast<size_t>((NI + NO) * chunk * c));
  // Buffer k holds operand k: the inputs, then the outputs.
  auto slot = [&](size_t k) { return buffer.data() + static_cast<int64_t>(k) * chunk * c; };
  std::array<const float*, NI> i;
  std::array<float*, NO> o;
  for (size_t k = 0; k < NI; ++k) i[k] = slot(k);
  for (size_t k = 0; k < NO; ++k) o[k] = slot(NI + k);
  for (int64_t m = lo; m < hi; m += chunk) {
    const int64_t rows = std::min(chunk, hi - m), n = rows * c;
    for (size_t k = 0; k < NI; ++k) widen_bf16(in[k] + m * c, slot(k), n);
    if (read_outputs)
      for (size_t k = 0; k < NO; ++k) widen_bf16(out[k] + m * c, o[k], n);
    body(i, o, rows);
    for (size_t k = 0; k < NO; ++k) narrow_to_bf16(o[k], out[k] + m * c, n);
  }
}

}  // namespace tr::cpu::detail

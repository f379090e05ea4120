// SPDX-License-Identifier: GPL-3.0-or-later
// Whole-array FP16 <-> FP32 conversion for the CPU kernels: flat spans, and
// rows whose FP16 side has a padded channel dimension (features and gradient
// slots align C to 8, input buffers to 4).
//
// F16C does a conversion in one instruction per 8 values where the CPU has
// it; elsewhere the branch-free bit conversion of half_convert.h runs. Both
// round to nearest even and give the same bits, except that F16C widens a
// signaling NaN to a quiet one.
#pragma once

#include <cstdint>

namespace tr::cpu {

// True when the fast path (F16C with AVX2) is in use on this CPU.
bool half_arrays_use_f16c() noexcept;

// out[i] = in[i] for n values.
void widen_half(const uint16_t* in, float* out, int64_t n);
void narrow_to_half(const float* in, uint16_t* out, int64_t n);

// `rows` rows of `c` values: FP16 rows `stride` (>= c) elements apart into
// compact FP32 rows, and back, where the FP16 padding lanes c..stride-1 are
// written as zero.
void widen_half_rows(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c);
void narrow_to_half_rows(const float* in, uint16_t* out, int64_t stride, int64_t rows, int64_t c);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Whole-array bfloat16 <-> FP32 conversion for the CPU kernels: flat spans,
// and rows whose bfloat16 side has a padded channel dimension (as the FP16
// ones of half_arrays.h).
//
// AVX-512 BF16 narrows 16 values in one instruction where the CPU has it
// (widening is a shift, AVX-512F); elsewhere bf16_convert.h's bit conversion
// runs. Both give the same bits.
#pragma once

#include <cstdint>

namespace tr::cpu {

// Kernels that read compact bfloat16 where it lies widen this many values
// at a time on their stack; a cache line holds kBf16Line of them (threads'
// ranges start on one).
inline constexpr int64_t kBf16Block = 512;
inline constexpr int64_t kBf16Line = 32;

// True when the AVX-512 BF16 path is in use on this CPU.
bool bf16_arrays_use_avx512() noexcept;

// out[i] = in[i] for n values.
void widen_bf16(const uint16_t* in, float* out, int64_t n);
void narrow_to_bf16(const float* in, uint16_t* out, int64_t n);

// `rows` rows of `c` values: bfloat16 rows `stride` (>= c) elements apart
// into compact FP32 rows, and back, where the padding lanes c..stride-1 are
// written as zero.
void widen_bf16_rows(const uint16_t* in, int64_t stride, float* out, int64_t rows, int64_t c);
void narrow_to_bf16_rows(const float* in, uint16_t* out, int64_t stride, int64_t rows, int64_t c);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// bfloat16 <-> binary32 bit conversion, as AVX-512 BF16's VCVTNEPS2BF16
// defines it, so that the scalar tail of a vector loop gives the vector's bits.
//
// Round to nearest, ties to even; zeros and subnormal inputs become a zero
// of the same sign (the instruction treats subnormals as zero); infinities
// stay; a NaN keeps its sign and top payload bits and gets the quiet bit.
// Widening is exact: bfloat16 is the top half of a binary32.
#pragma once

#include <bit>
#include <cstdint>

#include "core/bit_select.h"

namespace tr {

inline uint16_t float_to_bf16_bits(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t exponent = bits & 0x7F800000u;
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t nan = (bits >> 16) | 0x0040u;
  const uint32_t zero = (bits >> 16) & 0x8000u;
  const bool is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  // An infinity rounds to itself: its low half is zero.
  const uint32_t out = select_bits(exponent == 0, zero, select_bits(is_nan, nan, rounded));
  return static_cast<uint16_t>(out);
}

inline float bf16_bits_to_float(uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// IEEE binary16 <-> binary32 bit conversion for the RANGE casts.
//
// Branch-free, so that whole-span loops vectorise.
#pragma once

#include <bit>
#include <cstdint>

#include "core/bit_select.h"

namespace tr::cpu {

// Round to nearest, ties to even: |x| >= 65520 becomes inf, subnormal halves
// are produced exactly, NaN stays NaN (quiet bit set, top payload bits kept).
// Requires the default FP environment (round-to-nearest, no flush-to-zero):
// the subnormal path lets the FPU do the rounding.
inline uint16_t float_to_half_bits(float value) noexcept {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t mag = bits & 0x7FFFFFFFu;

  // Overflow (>= 2^16 before rounding), inf or NaN.
  const uint32_t special =
      select_bits(mag > 0x7F800000u, 0x7E00u | ((mag >> 13) & 0x3FFu), 0x7C00u);

  // Results that are subnormal halves (< 2^-14): adding 0.5 aligns the
  // mantissa so the FPU's own rounding does round-to-nearest-even.
  constexpr uint32_t kDenormMagic = ((127 - 15) + (23 - 10) + 1) << 23;
  const float shifted = std::bit_cast<float>(mag) + std::bit_cast<float>(kDenormMagic);
  const uint32_t subnormal = std::bit_cast<uint32_t>(shifted) - kDenormMagic;

  // Normal: rebias the exponent and round the 13 dropped bits; a carry into
  // the exponent is correct, and from 65520 on it reaches inf exactly.
  const uint32_t odd = (mag >> 13) & 1u;
  const uint32_t normal = (mag + (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + odd) >> 13;

  const uint32_t out =
      select_bits(mag >= 0x47800000u, special, select_bits(mag < 0x38800000u, subnormal, normal));
  return static_cast<uint16_t>(out | sign);
}

// Exact: every binary16 value is a binary32 value.
inline float half_bits_to_float(uint16_t half) noexcept {
  constexpr uint32_t kShiftedExp = 0x7C00u << 13;  // the exponent field after the shift
  constexpr float kMagic = std::bit_cast<float>(uint32_t{113} << 23);  // 2^-14
  uint32_t o = (static_cast<uint32_t>(half) & 0x7FFFu) << 13;
  const uint32_t exp = o & kShiftedExp;
  o += static_cast<uint32_t>(127 - 15) << 23;
  // Inf/NaN: push the exponent to all ones.
  const uint32_t inf_nan = o + (static_cast<uint32_t>(128 - 16) << 23);
  // Subnormal: renormalise through one exact float subtraction.
  const uint32_t sub =
      std::bit_cast<uint32_t>(std::bit_cast<float>(o + (uint32_t{1} << 23)) - kMagic);
  const uint32_t mag = select_bits(exp == kShiftedExp, inf_nan, select_bits(exp == 0, sub, o));
  return std::bit_cast<float>(mag | ((static_cast<uint32_t>(half) & 0x8000u) << 16));
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Bit-level binary16 conversion, so results never depend on the host FPU or compiler.
#include "data/half.h"

#include <bit>

namespace tr {

namespace {

// Rounds q + (dropped bits)/2^shift to nearest even; `dropped` holds the low
// `shift` bits that were shifted out of q.
constexpr uint32_t round_nearest_even(uint32_t q, uint32_t dropped, uint32_t shift) noexcept {
  const uint32_t halfway = 1u << (shift - 1);
  if (dropped > halfway || (dropped == halfway && (q & 1u))) ++q;
  return q;
}

}  // namespace

uint16_t fp32_to_fp16(float value) noexcept {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) {  // NaN: force the quiet bit so a payload of low bits can't become inf
    return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x03ffu));
  }
  if (abs >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65536 or inf
  const uint32_t exponent = abs >> 23;
  if (exponent >= 113) {  // normal in binary16; a carry out of the mantissa bumps the exponent,
                          // which is exactly right (65520 rounds up to inf this way)
    const uint32_t q = ((exponent - 112) << 10) | ((abs & 0x7fffffu) >> 13);
    return static_cast<uint16_t>(sign | round_nearest_even(q, abs & 0x1fffu, 13));
  }
  if (exponent < 102) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
  // Subnormal result in units of 2^-24; 2^-25 itself is a tie and rounds to even (zero).
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14..24
  const uint32_t q = mantissa >> shift;
  return static_cast<uint16_t>(sign |
                               round_nearest_even(q, mantissa & ((1u << shift) - 1u), shift));
}

float fp16_to_fp32(uint16_t bits) noexcept {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x03ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) {
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
  }
  // Subnormal or zero: mantissa * 2^-24 is exact in binary32.
  const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

void fp32_to_fp16(const float* in, uint16_t* out, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) out[i] = fp32_to_fp16(in[i]);
}

void fp16_to_fp32(const uint16_t* in, float* out, size_t count) noexcept {
  for (size_t i = 0; i < count; ++i) out[i] = fp16_to_fp32(in[i]);
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// Vectorisable exp, tanh, sigmoid and the normal distribution function for
// the activation and attention kernels.
//
// glibc's expf/tanhf stay scalar calls without -ffast-math (tanhf ~30 ns an
// element). These are Cephes' single-precision polynomials: about 1 ulp in exp,
// 2 ulp in tanh, the accuracy of PyTorch's SLEEF paths.
#pragma once

#include <bit>
#include <cstdint>

namespace tr::cpu {

// a where c, else b, through a bit mask. A plain ?: lets GCC sink the
// arithmetic of the unused side into a branch, and under the default
// -ftrapping-math it will not speculate float ops back, so the loop stays scalar.
inline float select(bool c, float a, float b) noexcept {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// e^x for x in [-87, 88]; outside, the argument is clamped (tiny or huge but
// finite results, which only ever feed 1/(1+e) here). NaN stays NaN.
inline float exp_approx(float x) noexcept {
  x = select(x < -87.0f, -87.0f, x);
  x = select(x > 88.0f, 88.0f, x);
  // Round x*log2(e) to an integer n by adding 1.5*2^23: n then also sits in
  // the low mantissa bits, so no float -> int conversion (UB for NaN) is needed.
  constexpr float kRound = 12582912.0f;
  const float v = x * 1.44269504088896341f + kRound;
  const float n = v - kRound;
  const uint32_t n_bits = std::bit_cast<uint32_t>(v) - std::bit_cast<uint32_t>(kRound);
  // Cody-Waite: ln 2 in two parts keeps the reduced argument exact.
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  return p * std::bit_cast<float>((n_bits + 127u) << 23);
}

// Odd: computed on |x|, the sign put back last (so tanh(-0) is -0).
inline float tanh_approx(float x) noexcept {
  const uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  const float ax = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  // Near zero an odd polynomial; 1 - 2/(e^2x + 1) would cancel there.
  const float z = ax * ax;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * ax + ax;
  const float large = 1.0f - 2.0f / (exp_approx(2.0f * ax) + 1.0f);
  const float magnitude = select(ax < 0.625f, small, large);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
}

// erfc(z) for z >= 0 with a relative error near 1.2e-7 everywhere (a
// Chebyshev fit of log(erfc(z) / t), t = 1 / (1 + z/2), Numerical Recipes'
// erfcc): no cancellation in the tail, where 1 - erf(z) would lose it all.
inline float erfc_nonnegative_approx(float z) noexcept {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * exp_approx(p - z * z);
}

// The standard normal distribution function Phi(x) = (1 + erf(x / sqrt 2)) / 2,
// from erfc on |x| so that both tails keep their relative accuracy.
inline float normal_cdf_approx(float x) noexcept {
  const float ax = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  const float tail = 0.5f * erfc_nonnegative_approx(ax * 0.70710678118654752f);
  return select(x < 0.0f, tail, 1.0f - tail);
}

// 1 / (1 + e^-x)
inline float sigmoid_approx(float x) noexcept {
  return 1.0f / (1.0f + exp_approx(-x));
}

}  // namespace tr::cpu

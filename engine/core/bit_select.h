// SPDX-License-Identifier: GPL-3.0-or-later
// A branch-free choice between two bit patterns, for the 16-bit conversions
// (FP16, bfloat16) whose whole-span loops must vectorise.
#pragma once

#include <cstdint>

namespace tr {

// a where c, else b, through a mask: a ternary here would let GCC sink the
// float arithmetic into a branch, and under -ftrapping-math it then refuses
// to if-convert the loop back into vector code.
constexpr uint32_t select_bits(bool c, uint32_t a, uint32_t b) noexcept {
  const uint32_t m = 0u - static_cast<uint32_t>(c);
  return (a & m) | (b & ~m);
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// Shape: the four NHWC extents of every tensor the engine plans.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tr {

struct Shape {
  int64_t n = 1, h = 1, w = 1, c = 1;

  constexpr int64_t elements() const noexcept { return n * h * w * c; }
  constexpr int64_t per_sample() const noexcept { return h * w * c; }
  constexpr bool is_flat() const noexcept { return h == 1 && w == 1; }
  constexpr bool operator==(const Shape&) const noexcept = default;
  std::array<int64_t, 4> dims() const noexcept { return {n, h, w, c}; }
  // "[128,28,28,1]"
  std::string str() const;
};

}  // namespace tr

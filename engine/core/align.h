// SPDX-License-Identifier: GPL-3.0-or-later
// Integer alignment helpers used by the memory plan.
#pragma once

#include <cstdint>

namespace tr {

constexpr uint64_t align_up(uint64_t value, uint64_t alignment) noexcept {
  return alignment <= 1 ? value : (value + alignment - 1) / alignment * alignment;
}

constexpr uint64_t align256(uint64_t value) noexcept {
  return align_up(value, 256);
}

}  // namespace tr

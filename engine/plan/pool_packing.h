// SPDX-License-Identifier: GPL-3.0-or-later
// Interval packing for the step-local pool: tensors whose lifetimes (closed
// intervals of positions in a step) do not overlap may share bytes. Offsets
// are decided once, at compile time; nothing here knows about graphs, only
// sizes and intervals.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <renaissance/memory_plan.h>

namespace tr {

struct PoolItem {
  uint64_t bytes = 0;       // a multiple of the pool's alignment
  int first = 0, last = 0;  // live over [first, last]
};

struct PoolPacking {
  std::vector<uint64_t> offsets;  // per item, from the start of the pool
  uint64_t bytes = 0;             // the pool's size: the largest end
  PackingStrategy strategy = PackingStrategy::GREEDY_BY_SIZE;
};

PoolPacking pack_pool(const std::vector<PoolItem>& items, PackingStrategy strategy);
// Both strategies; the smaller pool wins (greedy by size on a tie).
PoolPacking pack_pool(const std::vector<PoolItem>& items);

// The most bytes live at one position: no packing can go below it.
uint64_t pool_lower_bound(const std::vector<PoolItem>& items);

// Index pairs (a, b), a < b, that are live at the same time and share bytes
// under `offsets`: empty for a correct packing.
std::vector<std::pair<size_t, size_t>> pool_conflicts(const std::vector<PoolItem>& items,
                                                      const std::vector<uint64_t>& offsets);

}  // namespace tr

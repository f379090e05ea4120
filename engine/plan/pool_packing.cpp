// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/pool_packing.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

namespace tr {

namespace {

bool live_together(const PoolItem& a, const PoolItem& b) noexcept {
  return a.first <= b.last && b.first <= a.last;
}

// Places items in `order`; `best_fit` picks the smallest fitting gap, else the lowest.
PoolPacking place(const std::vector<PoolItem>& items, const std::vector<size_t>& order,
                  bool best_fit) {
  PoolPacking out;
  out.offsets.assign(items.size(), 0);
  std::vector<size_t> placed;
  placed.reserve(items.size());
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // [offset, end) of overlapping placed items
  for (size_t i : order) {
    const PoolItem& it = items[i];
    busy.clear();
    for (size_t p : placed)
      if (live_together(items[p], it))
        busy.emplace_back(out.offsets[p], out.offsets[p] + items[p].bytes);
    std::sort(busy.begin(), busy.end());
    uint64_t cursor = 0, chosen = std::numeric_limits<uint64_t>::max();
    uint64_t chosen_gap = std::numeric_limits<uint64_t>::max();
    for (const auto& [begin, end] : busy) {
      if (begin > cursor) {
        const uint64_t gap = begin - cursor;
        if (gap >= it.bytes && gap < chosen_gap) {
          chosen = cursor;
          chosen_gap = gap;
          if (!best_fit) break;
        }
      }
      cursor = std::max(cursor, end);
    }
    if (chosen == std::numeric_limits<uint64_t>::max()) chosen = cursor;
    out.offsets[i] = chosen;
    out.bytes = std::max(out.bytes, chosen + it.bytes);
    placed.push_back(i);
  }
  return out;
}

}  // namespace

std::string_view packing_strategy_name(PackingStrategy s) noexcept {
  return s == PackingStrategy::GREEDY_BY_SIZE ? "greedy by size, best fit"
                                              : "first fit by first use";
}

PoolPacking pack_pool(const std::vector<PoolItem>& items, PackingStrategy strategy) {
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Ties fall back to the index, so the result never depends on the sort.
  if (strategy == PackingStrategy::GREEDY_BY_SIZE)
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
      if (items[a].first != items[b].first) return items[a].first < items[b].first;
      return a < b;
    });
  else
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (items[a].first != items[b].first) return items[a].first < items[b].first;
      if (items[a].bytes != items[b].bytes) return items[a].bytes > items[b].bytes;
      return a < b;
    });
  PoolPacking p = place(items, order, strategy == PackingStrategy::GREEDY_BY_SIZE);
  p.strategy = strategy;
  return p;
}

PoolPacking pack_pool(const std::vector<PoolItem>& items) {
  PoolPacking by_size = pack_pool(items, PackingStrategy::GREEDY_BY_SIZE);
  PoolPacking by_start = pack_pool(items, PackingStrategy::FIRST_FIT_BY_START);
  return by_start.bytes < by_size.bytes ? by_start : by_size;
}

uint64_t pool_lower_bound(const std::vector<PoolItem>& items) {
  std::map<int, int64_t> delta;
  for (const PoolItem& it : items) {
    delta[it.first] += static_cast<int64_t>(it.bytes);
    delta[it.last + 1] -= static_cast<int64_t>(it.bytes);
  }
  int64_t live = 0, peak = 0;
  for (const auto& [position, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<uint64_t>(peak);
}

std::vector<std::pair<size_t, size_t>> pool_conflicts(const std::vector<PoolItem>& items,
                                                      const std::vector<uint64_t>& offsets) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t a = 0; a < items.size(); ++a)
    for (size_t b = a + 1; b < items.size(); ++b) {
      if (!live_together(items[a], items[b]) || items[a].bytes == 0 || items[b].bytes == 0)
        continue;
      if (offsets[a] < offsets[b] + items[b].bytes && offsets[b] < offsets[a] + items[a].bytes)
        out.emplace_back(a, b);
    }
  return out;
}

}  // namespace tr

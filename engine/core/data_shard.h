// SPDX-License-Identifier: GPL-3.0-or-later
// How the data-parallel ranks split a span of floats they all hold (ZeRO-1,
// training.sharding "optimizer"): each rank owns one contiguous share, whole
// 16-float lines (64 bytes) long but for the last, in rank order. The plan
// sizes the optimizer state's shards by it, the graphs' resolver windows the
// sharded updates with it, and the collectives gather by it, so all agree.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tr {

// The bytes of one rank's share of `bytes` split over `world` ranks.
inline uint64_t shard_chunk_bytes(uint64_t bytes, int world) {
  const uint64_t floats = bytes / 4, ranks = static_cast<uint64_t>(world);
  const uint64_t per = (floats + ranks - 1) / ranks;
  return (per + 15) / 16 * 16 * 4;
}

// Rank `rank`'s share of `bytes`, as [begin, end) from their start (empty
// for a rank past the end of a short span).
struct ShardShare {
  uint64_t begin = 0, end = 0;
  uint64_t bytes() const { return end - begin; }
};

inline ShardShare shard_share(uint64_t bytes, int rank, int world) {
  const uint64_t c = shard_chunk_bytes(bytes, world), r = static_cast<uint64_t>(rank);
  return {std::min(bytes, c * r), std::min(bytes, c * (r + 1))};
}

}  // namespace tr

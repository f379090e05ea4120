// SPDX-License-Identifier: GPL-3.0-or-later
// The two gradient buckets the data-parallel ranks all-reduce (ENGINE.md:
// the deep convolutions' under the first layers' backward, then the rest),
// and under ZeRO-1 also the spans whose optimizer state they shard: a
// bucket's parameter kinds are contiguous in every parameter series.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include <renaissance/memory_plan.h>
#include <renaissance/region.h>

#include "core/data_shard.h"

namespace tr {

struct GradientBucket {
  ParamKind first, last;
  std::string_view name;
};

inline constexpr GradientBucket kGradientBuckets[] = {
    {ParamKind::BN_BIAS, ParamKind::FIRST_CONV, "first"},
    {ParamKind::DEEP_CONV, ParamKind::DEEP_CONV, "deep"},
};

// The bucket whose kinds hold `kind`.
inline int bucket_of(ParamKind kind) {
  return kind >= kGradientBuckets[1].first ? 1 : 0;
}

// The bucket's bytes in `series` (the same in every full series).
inline ByteRange bucket_range(const MemoryPlan& plan, const GradientBucket& b, ParamSeries series) {
  return plan.region_range(param_region(series, b.first), param_region(series, b.last));
}

// Its bytes before the plan is laid out: what the parameters' slots sum to.
inline uint64_t bucket_bytes(const MemoryPlan& plan, const GradientBucket& b) {
  uint64_t bytes = 0;
  for (int k = static_cast<int>(b.first); k <= static_cast<int>(b.last); ++k)
    for (DTensorId id :
         plan.region(param_region(ParamSeries::W, static_cast<ParamKind>(k))).tensors)
      bytes += plan.get_dtensor(id).slot_bytes;
  return bytes;
}

// Where weight `w` (a tensor of the W series) and rank `rank`'s share of its
// bucket meet: bytes from the weight's start and from the share's start, and
// how many (0: they do not meet). The moments' and summed gradients' shards
// hold each weight's values at these places.
struct ShareOverlap {
  uint64_t in_weight = 0, in_share = 0, bytes = 0;
};

inline ShareOverlap share_overlap(const MemoryPlan& plan, const DTensor& w, int rank, int world) {
  const ByteRange bucket =
      bucket_range(plan, kGradientBuckets[bucket_of(*region_param_kind(w.region))], ParamSeries::W);
  const uint64_t begin = w.offset - bucket.offset;
  const uint64_t end = begin + static_cast<uint64_t>(w.shape.elements()) * 4;
  const ShardShare share = shard_share(bucket.bytes, rank, world);
  const uint64_t lo = std::max(begin, share.begin), hi = std::min(end, share.end);
  if (hi <= lo) return {};
  return {lo - begin, lo - share.begin, hi - lo};
}

}  // namespace tr

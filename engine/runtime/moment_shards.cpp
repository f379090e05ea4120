// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/moment_shards.h"

#include <algorithm>
#include <cstring>

#include "plan/gradient_buckets.h"

namespace tr {

namespace {

// The part of moment `m` each rank holds: its bytes from the moment's start,
// and from its shard's start.
struct Piece {
  int rank;
  uint64_t in_moment, in_shard, bytes;
};

std::vector<Piece> pieces(const CompiledProject& cp, const ShardedMoment& m) {
  std::vector<Piece> out;
  for (int r = 0; r < cp.world_size; ++r)
    if (const ShareOverlap o = share_overlap(cp.plans.front(), *m.weight, r, cp.world_size);
        o.bytes > 0)
      out.push_back({r, o.in_weight, o.in_share, o.bytes});
  return out;
}

}  // namespace

std::vector<ShardedMoment> sharded_moments(const CompiledProject& cp) {
  std::vector<ShardedMoment> out;
  if (!cp.sharded_optimizer) return out;
  const MemoryPlan& plan = cp.plans.front();
  for (ParamSeries series : {ParamSeries::M, ParamSeries::V})
    for (int k = 0; k < kParamKinds; ++k) {
      const auto kind = static_cast<ParamKind>(k);
      const size_t b = static_cast<size_t>(bucket_of(kind));
      const DTensorId shard =
          series == ParamSeries::M ? cp.engine.m_shard[b] : cp.engine.v_shard[b];
      if (shard == kNoTensor) continue;
      for (DTensorId id : plan.region(param_region(ParamSeries::W, kind)).tensors)
        out.push_back(
            {std::string(region_name(param_region(series, kind))), &plan.get_dtensor(id), shard});
    }
  return out;
}

std::vector<float> gather_moment(const CompiledProject& cp, const ShardedMoment& m,
                                 const RankShards& shards) {
  std::vector<float> out(static_cast<size_t>(m.weight->shape.elements()));
  for (const Piece& p : pieces(cp, m)) {
    const std::vector<float>& from = shards.at(static_cast<size_t>(p.rank)).at(m.shard);
    std::memcpy(reinterpret_cast<uint8_t*>(out.data()) + p.in_moment,
                reinterpret_cast<const uint8_t*>(from.data()) + p.in_shard, p.bytes);
  }
  return out;
}

void scatter_moment(const CompiledProject& cp, const ShardedMoment& m,
                    const std::vector<float>& values, RankShards& shards) {
  for (const Piece& p : pieces(cp, m)) {
    std::vector<float>& to = shards.at(static_cast<size_t>(p.rank)).at(m.shard);
    std::memcpy(reinterpret_cast<uint8_t*>(to.data()) + p.in_shard,
                reinterpret_cast<const uint8_t*>(values.data()) + p.in_moment, p.bytes);
  }
}

std::vector<DTensorId> shard_tensors(const CompiledProject& cp) {
  std::vector<DTensorId> out;
  for (const DTensorId* series : {cp.engine.m_shard, cp.engine.v_shard})
    for (int b = 0; b < 2; ++b)
      if (series[b] != kNoTensor) out.push_back(series[b]);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// ZeRO-1's optimizer moments in checkpoints. Each rank holds its share of
// every gradient bucket's momentum and second moment (EngineTensors::m_shard,
// core/data_shard.h); a checkpoint keeps them as an unsharded run does, one
// whole tensor per weight and series named as the weight, so a run resumes
// on any number of ranks, sharded or not.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compile/compiler.h"

namespace tr {

// One weight's moment in one series, as the checkpoint names it.
struct ShardedMoment {
  std::string region;               // "M_DEEP_CONV": where an unsharded plan keeps it
  const DTensor* weight = nullptr;  // its weight: name, shape, place in the bucket
  DTensorId shard = kNoTensor;      // the series' shard of the weight's bucket
};

// Empty unless cp.sharded_optimizer.
std::vector<ShardedMoment> sharded_moments(const CompiledProject& cp);

// Every rank's shard tensors, as read from its arena: shards[rank].at(id).
using RankShards = std::vector<std::map<DTensorId, std::vector<float>>>;

// The whole moment, from the ranks' shards.
std::vector<float> gather_moment(const CompiledProject& cp, const ShardedMoment& m,
                                 const RankShards& shards);
// Writes `values` (the whole moment) into the ranks' shards.
void scatter_moment(const CompiledProject& cp, const ShardedMoment& m,
                    const std::vector<float>& values, RankShards& shards);
// The shard tensors (both buckets, M and V), in id order.
std::vector<DTensorId> shard_tensors(const CompiledProject& cp);

}  // namespace tr

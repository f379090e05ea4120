// SPDX-License-Identifier: GPL-3.0-or-later
// Resolves a ComputationGraph for one rank: every DTensor id and region span
// becomes a pointer into that rank's arena (base + offset), once, before
// capture. The launches built from it are what a backend captures; nothing
// on the hot path hashes, allocates or looks anything up.
#pragma once

#include <vector>

#include "compile/compiler.h"
#include "runtime/launch.h"

namespace tr {

struct ResolvedNode {
  KernelArgs args;                    // the whole node (part = -1)
  Footprint footprint;                // bytes the whole node reads and writes
  std::vector<KernelArgs> part_args;  // forked ops: one per ForkPart, in fork order
  std::vector<Footprint> part_footprints;
};

struct ResolvedGraph {
  const ComputationGraph* graph = nullptr;
  int variant = 0;
  int rank = 0;
  std::vector<ResolvedNode> nodes;
};

// Host memory a TRANSFER graph copies from (fixed for the life of the
// captured graph, like CUDA's page-locked staging buffers).
struct TransferHost {
  const void* data = nullptr;
  const void* labels = nullptr;
};

// `variant` selects the plan (shapes); shared graphs may use any variant's plan.
ResolvedGraph resolve_graph(const CompiledProject& cp, const ComputationGraph& graph, int variant,
                            uint8_t* arena, int rank, int world);

// The launches of node `index` (several for a forked op, in fork order);
// `host` is used by H2D_INPUT only.
std::vector<Launch> node_launches(const CompiledProject& cp, const ResolvedGraph& rg, size_t index,
                                  const TransferHost& host);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// ComputationGraph: an ordered list of nodes for one GraphId. COMPUTE nodes
// name DTensor ids (never pointers, never shapes); RANGE nodes name spans of
// regions. The stream of each node comes from the stream policy.
#pragma once

#include <string>
#include <vector>

#include <renaissance/dtensor.h>
#include <renaissance/graph_id.h>
#include <renaissance/region.h>
#include <renaissance/stream_kind.h>
#include "compile/node_params.h"
#include "compile/ops.h"

namespace tr {

class MemoryPlan;
struct ModelGraph;

enum class NodeKind : uint8_t { COMPUTE, RANGE };

// The ranks a collective node spans on the device mesh: its data-parallel
// group (the ranks with its tensor index; every rank without tensor
// parallel), its tensor-parallel group (the consecutive ranks that split
// their samples' layers) or all of them (results and batch-norm
// statistics, over every rank's own samples).
enum class CommGroup : uint8_t { Data, Tensor, World };

// Inclusive span of regions in enum order.
struct RegionSpan {
  Region first = Region::T_SCRATCH;
  Region last = Region::T_SCRATCH;
  bool operator==(const RegionSpan&) const noexcept = default;
};

// One part of a forked backward op and the part it must wait for (-1: none).
struct ForkPart {
  BwdPart part = BwdPart::DW;
  StreamKind stream = StreamKind::COMP_1;
  int after = -1;  // index into GraphNode::fork
};

struct GraphNode {
  NodeKind kind = NodeKind::COMPUTE;
  ComputeOp op = ComputeOp::IDENTITY;  // when COMPUTE
  RangeOp range_op = RangeOp::CLEAR;   // when RANGE
  std::vector<DTensorId> inputs;
  std::vector<DTensorId> outputs;
  std::vector<RegionSpan> in_spans;
  std::vector<RegionSpan> out_spans;
  int layer = -1;  // model node index, -1 for engine work
  // Bit i set: output i is added into instead of overwritten (a gradient
  // slot that several consumers write).
  uint8_t accumulate_mask = 0;
  StreamKind stream = StreamKind::COMP_1;  // representative stream
  std::vector<ForkPart> fork;              // non-empty for forked backward ops
  NodeParams params;                       // resolved by the compiler (resolve_node_params)
  // A RANGE update under ZeRO-1: each rank reaches only its share of the
  // spans' gradient bucket (core/data_shard.h), its moments in the bucket's
  // shards (EngineTensors::m_shard); WEIGHT_GATHER's all-gather shares them.
  bool data_sharded = false;
  CommGroup group = CommGroup::Data;  // a collective's ranks
  // A row-parallel layer's forward: its bias is added by tensor rank 0 only,
  // so the all-reduce of the partial products adds it once.
  bool bias_on_first_tensor_rank = false;
};

struct ComputationGraph {
  GraphId id = GraphId::ZERO_GRAD;
  int variant = -1;                        // index of the variant, -1 when shared by all
  bool shape_invariant = false;            // only RANGE nodes: captured once for all variants
  StreamKind stream = StreamKind::UPDATE;  // the stream the graph is launched on
  std::vector<GraphNode> nodes;
};

// Readable text of a graph, one node a line, with tensor names and shapes
// from `plan` and layer ids from `model`.
std::string graph_to_text(const ComputationGraph& graph, const MemoryPlan& plan,
                          const ModelGraph& model, const std::string& variant_name);

}  // namespace tr

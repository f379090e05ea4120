// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/channel_blocks.h"

#include <vector>

#include "compile/ops.h"

namespace tr {

namespace {

// A feature map, its gradient or a pooling mask, of whole blocks and more
// than one pixel a sample (a [N, 1, 1, C] map lies the same either way).
bool candidate(const DTensor& t, int block) {
  const bool feature =
      (t.region == Region::F_FEATURE_FP32 || t.region == Region::F_GRAD_SLOT_FP32) &&
      t.dtype == DType::FP32;
  const bool mask = t.region == Region::S_MASK && t.dtype == DType::INT8;
  return (feature || mask) && !t.pad_channels && t.shape.c % block == 0 &&
         t.shape.h * t.shape.w > 1;
}

bool spatial(const MemoryPlan& plan, DTensorId id) {
  const Shape& s = plan.get_dtensor(id).shape;
  return s.h * s.w > 1;
}

// The operands of `n` whose layouts must agree: all its feature maps, the
// maps of its batch with more than one pixel. For a convolution those are x,
// y or dy, and dx; but a 1-channel x (an image) lies the same as NCHW, which
// oneDNN's kernels for blocked outputs read, so it may stay plain. (A plain
// x of more channels beside a blocked y would land on oneDNN's reference
// kernel.)
std::vector<DTensorId> agreeing(const GraphNode& n, const MemoryPlan& plan) {
  const bool conv = n.op == ComputeOp::CONV_FWD || n.op == ComputeOp::CONV_BWD ||
                    n.op == ComputeOp::CONV_BWD_FIRST;
  if (conv) {
    std::vector<DTensorId> ids;
    auto add = [&](const std::vector<DTensorId>& side, size_t i) {
      if (i < side.size() && side[i] != kNoTensor) ids.push_back(side[i]);
    };
    if (!n.inputs.empty() && n.inputs.front() != kNoTensor &&
        plan.get_dtensor(n.inputs.front()).shape.c != 1)
      add(n.inputs, 0);                                  // x
    if (n.op == ComputeOp::CONV_FWD) add(n.outputs, 0);  // y
    if (n.op == ComputeOp::CONV_BWD) add(n.inputs, 2), add(n.outputs, n.outputs.size() - 1);
    if (n.op == ComputeOp::CONV_BWD_FIRST) add(n.inputs, 1);  // dy
    return ids;
  }
  // The maps of the op's batch: not a batch norm's saved statistics ([1, 1, 2, C]).
  const int64_t batch = n.inputs.empty() || n.inputs.front() == kNoTensor
                            ? -1
                            : plan.get_dtensor(n.inputs.front()).shape.n;
  std::vector<DTensorId> ids;
  for (const auto* side : {&n.inputs, &n.outputs})
    for (DTensorId id : *side)
      if (id != kNoTensor && spatial(plan, id) && plan.get_dtensor(id).shape.n == batch)
        ids.push_back(id);
  return ids;
}

}  // namespace

void choose_channel_blocks(CompiledProject& cp, int block) {
  if (block <= 0 || cp.tensor_ranks > 1) return;
  for (size_t v = 0; v < cp.plans.size(); ++v) {
    MemoryPlan& plan = cp.plans[v];
    const std::vector<DTensor>& ts = plan.dtensors();
    std::vector<char> ok(ts.size(), 0);
    for (size_t i = 0; i < ts.size(); ++i) ok[i] = candidate(ts[i], block);
    auto mark_off = [&](DTensorId id) {
      if (id == kNoTensor || !ok[static_cast<size_t>(id)]) return false;
      ok[static_cast<size_t>(id)] = 0;
      return true;
    };
    std::vector<const GraphNode*> nodes;
    for (const ComputationGraph& g : cp.graphs)
      if (g.variant < 0 || static_cast<size_t>(g.variant) == v)
        for (const GraphNode& n : g.nodes) nodes.push_back(&n);
    // Every op that touches a blocked map must take it.
    for (const GraphNode* n : nodes) {
      if (n->kind == NodeKind::COMPUTE &&
          compute_op_info(n->op).channel_blocks != ChannelBlocks::None)
        continue;
      for (const auto* side : {&n->inputs, &n->outputs})
        for (DTensorId id : *side) mark_off(id);
    }
    // A plain operand makes the others of its op plain too, to a fixpoint.
    for (bool changed = true; changed;) {
      changed = false;
      for (const GraphNode* n : nodes) {
        if (n->kind != NodeKind::COMPUTE) continue;
        const std::vector<DTensorId> group = agreeing(*n, plan);
        bool all = true;
        for (DTensorId id : group) all = all && ok[static_cast<size_t>(id)];
        if (all) continue;
        for (DTensorId id : group) changed |= mark_off(id);
      }
    }
    for (size_t i = 0; i < ts.size(); ++i)
      if (ok[i]) plan.set_channel_block(static_cast<DTensorId>(i), block);
  }
}

int channel_blocked_tensors(const MemoryPlan& plan) {
  int n = 0;
  for (const DTensor& t : plan.dtensors()) n += t.is_blocked();
  return n;
}

}  // namespace tr

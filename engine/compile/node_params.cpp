// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/node_params.h"

#include <renaissance/project.h>
#include "compile/computation_graph.h"
#include "compile/layer_lowering.h"

namespace tr {

double NodeParams::eps_of(int owner) const {
  for (const OwnerEps& e : owner_eps)
    if (e.owner == owner) return e.eps;
  return NodeParams{}.eps;
}

NodeParams layer_node_params(const LayerNode& layer) {
  const LayerParams& l = layer.params;
  NodeParams p;
  p.label = layer.label();
  p.kernel_h = l.kernel_h;
  p.kernel_w = l.kernel_w;
  p.stride_h = l.stride_h;
  p.stride_w = l.stride_w;
  p.pad_h = l.pad_h;
  p.pad_w = l.pad_w;
  p.groups = l.groups;
  p.eps = l.eps;
  p.momentum = l.momentum;
  p.heads = l.heads;
  p.attention_dropout = l.attention_dropout;
  p.p = l.p;
  p.activation = layer_lowering(layer.type).activation;
  p.negative_slope = l.negative_slope;
  return p;
}

TrainingConstants training_constants(const TrainingSpec& training) {
  TrainingConstants c;
  c.optimizer = training.optimizer;
  c.ema_decay = training.ema_decay;
  c.precision = training.precision;
  c.sync_batch_norm = training.sync_batch_norm;
  c.loss_group = static_cast<int>(training.tensor_ranks);
  return c;
}

std::vector<OwnerEps> every_layer_eps(const ModelGraph& model) {
  std::vector<OwnerEps> out;
  for (size_t i = 0; i < model.nodes.size(); ++i)
    out.push_back({static_cast<int>(i), model.nodes[i].params.eps});
  return out;
}

void resolve_node_params(std::vector<ComputationGraph>& graphs, const ModelGraph& model) {
  const std::vector<OwnerEps> every_eps = every_layer_eps(model);
  for (ComputationGraph& g : graphs)
    for (GraphNode& n : g.nodes) {
      n.params = n.layer >= 0 && static_cast<size_t>(n.layer) < model.nodes.size()
                     ? layer_node_params(model.nodes[static_cast<size_t>(n.layer)])
                     : NodeParams{};
      if (n.kind == NodeKind::RANGE && n.range_op == RangeOp::BN_EQ_PARAMS)
        n.params.owner_eps = every_eps;
    }
}

}  // namespace tr

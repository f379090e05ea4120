// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/tensor_parallel.h"

#include <renaissance/error.h>

#include "compile/layer_lowering.h"

namespace tr {

namespace {

bool linear_like(LayerType t) {
  return t == LayerType::Linear || t == LayerType::TokenLinear;
}

// Per element of its one input: it computes a share of the channels as well
// as all of them.
bool elementwise(LayerType t) {
  return t == LayerType::ReLU || t == LayerType::Dropout ||
         layer_lowering(t).activation != Activation::NUM_ACTIVATIONS;
}

Diagnostic refusal(const Project& p, std::string message) {
  Diagnostic d;
  d.file = p.source_path;
  d.field = "training.mesh.tensor";
  d.message = std::move(message);
  return d;
}

}  // namespace

std::string_view tensor_split_name(TensorSplit s) noexcept {
  switch (s) {
    case TensorSplit::Whole:
      return "whole";
    case TensorSplit::Column:
      return "column";
    case TensorSplit::Local:
      return "local";
    case TensorSplit::Row:
      return "row";
  }
  return "?";
}

std::vector<LayerSplit> plan_tensor_parallel(const Project& p, const ModelAnalysis& a,
                                             int tensor_ranks) {
  const auto& nodes = p.model.nodes;
  std::vector<LayerSplit> out(nodes.size());
  if (tensor_ranks <= 1) return out;
  auto type = [&](int n) { return nodes[static_cast<size_t>(n)].type; };
  auto only_consumer = [&](int n) {
    const auto& c = a.consumers[static_cast<size_t>(n)];
    return c.size() == 1 && c.front().port == 0 ? c.front().node : -1;
  };
  const std::string mesh = "mesh tensor=" + std::to_string(tensor_ranks);
  std::vector<Diagnostic> problems;
  bool any = false;
  for (int v : a.order) {
    if (!linear_like(type(v)) || out[static_cast<size_t>(v)].split != TensorSplit::Whole) continue;
    // The chain to the row layer: elementwise layers, or one attention right after v.
    std::vector<int> middle;
    int row = -1, attention = -1;
    for (int at = only_consumer(v); at >= 0; at = only_consumer(at)) {
      if (type(at) == type(v)) {
        row = at;
        break;
      }
      if (type(at) == LayerType::SelfAttention && middle.empty() && attention < 0) {
        attention = at;
      } else if (!elementwise(type(at))) {
        break;
      }
      middle.push_back(at);
    }
    if (row < 0) {
      out[static_cast<size_t>(v)].why_whole =
          "its output does not reach another layer of its type through elementwise layers";
      continue;
    }
    // Its input's gradient is reduce-scattered right after its backward,
    // which must then be the only writer of that gradient.
    const int src = a.source_of(v, 0).node;
    if (src == a.input_node) {
      out[static_cast<size_t>(v)].why_whole =
          "it reads the input batch, which each tensor rank computes the first layer for "
          "on its own samples";
      continue;
    }
    if (a.consumers[static_cast<size_t>(src)].size() != 1) {
      out[static_cast<size_t>(v)].why_whole = "its input feeds other layers too";
      continue;
    }
    const LayerNode& node = nodes[static_cast<size_t>(v)];
    const LayerNode& shown = attention >= 0 ? nodes[static_cast<size_t>(attention)] : node;
    const std::string label =
        "layer '" + shown.design_id() + "'" + (shown.part_of.empty() ? "" : " (its attention)");
    if (attention >= 0) {
      const int64_t heads = nodes[static_cast<size_t>(attention)].params.heads;
      if (heads % tensor_ranks != 0) {
        problems.push_back(refusal(p, label + ": its " + std::to_string(heads) +
                                          " heads do not split over " + mesh +
                                          "; tensor parallel gives each rank the same number "
                                          "of heads"));
        continue;
      }
    } else if (node.params.out_channels % tensor_ranks != 0) {
      problems.push_back(refusal(p, "layer " + node.label() + ": its " +
                                        std::to_string(node.params.out_channels) +
                                        " output features do not split over " + mesh +
                                        " (column parallel gives each rank the same share)"));
      continue;
    }
    out[static_cast<size_t>(v)] = {TensorSplit::Column, attention >= 0 ? 3 : 1, {}};
    for (int m : middle) out[static_cast<size_t>(m)].split = TensorSplit::Local;
    out[static_cast<size_t>(row)].split = TensorSplit::Row;
    any = true;
  }
  if (!problems.empty()) throw ProjectError(std::move(problems));
  if (!any)
    throw ProjectError({refusal(
        p, mesh + ": no layer of the model splits over the tensor ranks. Tensor parallel splits "
                  "multi-head attention and pairs of Linear (or TokenLinear) layers joined by "
                  "elementwise layers only (an MLP); train with mesh tensor=1 (data parallel)")});
  return out;
}

Project tensor_rank_model(const Project& model, const std::vector<LayerSplit>& splits,
                          int tensor_ranks) {
  Project out = model;
  for (size_t i = 0; i < splits.size(); ++i) {
    LayerParams& params = out.model.nodes[i].params;
    if (splits[i].split == TensorSplit::Column) params.out_channels /= tensor_ranks;
    if (splits[i].split == TensorSplit::Local &&
        out.model.nodes[i].type == LayerType::SelfAttention)
      params.heads /= tensor_ranks;
  }
  return out;
}

void group_batch_shapes(ModelAnalysis& a, const std::vector<LayerSplit>& splits, int tensor_ranks) {
  a.total_flops = 0;
  for (size_t v = 0; v < a.nodes.size(); ++v) {
    NodeAnalysis& na = a.nodes[v];
    const TensorSplit s = v < splits.size() ? splits[v].split : TensorSplit::Whole;
    if (s != TensorSplit::Whole && na.known) {
      for (Shape& in : na.inputs) in.n *= tensor_ranks;
      if (s != TensorSplit::Row) na.output.n *= tensor_ranks;
      na.flops *= tensor_ranks;  // each split layer's work is linear in its batch
    }
    a.total_flops += na.flops;
  }
}

}  // namespace tr

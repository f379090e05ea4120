// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/composite_layers.h"

#include <stdexcept>

#include <renaissance/layer_spec.h>

namespace tr {

namespace {

LayerNode part(const LayerNode& of, const char* name, LayerType type, LayerParams params) {
  LayerNode n;
  n.id = of.id + "." + name;
  n.type = type;
  n.params = params;
  n.x = of.x;
  n.y = of.y;
  n.has_position = of.has_position;
  n.part_of = of.id;
  return n;
}

}  // namespace

std::vector<LayerNode> multi_head_attention_parts(const LayerNode& node, const Shape& input) {
  LayerParams proj = layer_spec(LayerType::TokenLinear).defaults;
  proj.bias = node.params.bias;
  proj.out_channels = 3 * input.c;
  LayerParams attention = layer_spec(LayerType::SelfAttention).defaults;
  attention.heads = node.params.heads;
  attention.attention_dropout = node.params.attention_dropout;
  std::vector<LayerNode> parts{part(node, "in_proj", LayerType::TokenLinear, proj),
                               part(node, "attention", LayerType::SelfAttention, attention)};
  proj.out_channels = input.c;
  parts.push_back(part(node, "out_proj", LayerType::TokenLinear, proj));
  return parts;
}

bool has_composite_layers(const ModelGraph& g) {
  for (const LayerNode& n : g.nodes)
    if (layer_spec(n.type).parts) return true;
  return false;
}

Project expand_composite_layers(const Project& design, const ModelAnalysis& analysis) {
  if (!analysis.ok()) throw std::logic_error("composite layers expanded in an invalid model");
  Project out = design;
  const auto& nodes = design.model.nodes;
  out.model.nodes.clear();
  // Where each design node's first and last part (or the node itself) went.
  std::vector<int> first(nodes.size()), last(nodes.size());
  std::vector<Edge> inner;
  for (size_t i = 0; i < nodes.size(); ++i) {
    first[i] = static_cast<int>(out.model.nodes.size());
    const PartsRule parts = layer_spec(nodes[i].type).parts;
    if (!parts) {
      out.model.nodes.push_back(nodes[i]);
    } else {
      for (LayerNode& p : parts(nodes[i], analysis.nodes[i].inputs.at(0))) {
        const int at = static_cast<int>(out.model.nodes.size());
        if (at > first[i]) inner.push_back({at - 1, 0, at, 0});
        out.model.nodes.push_back(std::move(p));
      }
    }
    last[i] = static_cast<int>(out.model.nodes.size()) - 1;
  }
  out.model.edges.clear();
  for (const Edge& e : design.model.edges)
    out.model.edges.push_back({last[static_cast<size_t>(e.from)], e.from_port,
                               first[static_cast<size_t>(e.to)], e.to_port});
  out.model.edges.insert(out.model.edges.end(), inner.begin(), inner.end());
  return out;
}

}  // namespace tr

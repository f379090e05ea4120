// SPDX-License-Identifier: GPL-3.0-or-later
// Shape inference over a model graph (NHWC): output shape, parameter count
// and forward FLOPs per node, plus every structural problem (missing Input or
// loss, unconnected ports, cycles, unused outputs, shape mismatches) as a
// Diagnostic naming the node. It never throws on a bad graph, because the
// designer runs it on half-built graphs after every edit.
#pragma once

#include <cstdint>
#include <vector>

#include <renaissance/error.h>
#include <renaissance/project.h>
#include <renaissance/shape.h>

namespace tr {

struct NodeAnalysis {
  std::vector<Shape> inputs;  // per input port, valid when `known`
  Shape output;               // valid when `known` and the node has an output
  bool known = false;         // shapes could be inferred
  int64_t params = 0;         // trainable parameters
  int64_t flops = 0;          // forward FLOPs for the analysed batch (a multiply-add is 2)
};

struct PortRef {
  int node = -1;
  int port = 0;
};

struct ModelAnalysis {
  std::vector<NodeAnalysis> nodes;
  std::vector<Diagnostic> problems;
  std::vector<int> order;         // topological order (complete when acyclic)
  std::vector<PortRef> producer;  // per node * kMaxInputPorts + port: who feeds that input port
  std::vector<std::vector<PortRef>> consumers;  // per node: who reads its output
  int input_node = -1;
  int loss_node = -1;
  int first_layer = -1;  // the first layer with weights, reading the Input
  int64_t total_params = 0;
  int64_t total_flops = 0;

  bool ok() const noexcept { return problems.empty(); }
  const PortRef& source_of(int node, int port) const {
    return producer[static_cast<size_t>(node * kMaxInputPorts + port)];
  }
};

// Analyses the model for a batch of `batch` samples; `height`/`width` other
// than 0 replace the Input node's resolution (resolution variants).
ModelAnalysis analyze_model(const Project& project, int64_t batch, int64_t height = 0,
                            int64_t width = 0);

// Throws ProjectError with every problem when the analysis found any.
void require_valid(const ModelAnalysis& analysis);

}  // namespace tr

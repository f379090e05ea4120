// SPDX-License-Identifier: GPL-3.0-or-later
// The compiler's half of each layer type's table entry: which graph node its
// forward and its backward become, given the layer's tensors. The model's
// half (model/layer_spec.h: name, parameters, shape rule) cannot name graph
// ops, so this table follows it entry for entry, in LayerType order, checked
// when the engine is built.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "compile/compiler.h"

namespace tr {

struct LoweringInputs {
  int layer = -1;  // the model node
  const LayerTensors* t = nullptr;
  ParamSeries weights = ParamSeries::W;  // the series the forward reads
  ParamSeries grads = ParamSeries::G;    // the series the backward writes
  bool training = true;
  DTensorId x = kNoTensor;         // the input on port 0
  DTensorId dx = kNoTensor;        // its gradient (none for the Input's)
  std::vector<DTensorId> xs, dxs;  // every port's input and gradient, port 0 first
  const EngineTensors* engine = nullptr;
  int buffer = 0;                       // the input buffer the forward reads (A or B)
  const LayerParams* params = nullptr;  // the layer's settings (TokenPool's mode)
};

// What a layer's own tensors (weights, batch-norm statistics, a dropout
// mask: all but its output and gradient) are allocated from.
struct OwnedTensors {
  const LayerNode* node = nullptr;
  int layer = -1;
  const NodeAnalysis* analysis = nullptr;
  bool first = false;  // the first layer with weights (it reads the Input)
  bool lars = false;   // LARS: each weight tensor has its norms
  MemoryPlan* plan = nullptr;
  // One parameter tensor in every series the run uses, its ids into `ids`.
  std::function<void(std::array<DTensorId, 7>& ids, ParamKind kind, const Shape& shape,
                     const std::string& name)>
      params;
};

struct LayerLowering {
  GraphNode (*forward)(const LoweringInputs& in) = nullptr;   // null: no kernel (Input)
  GraphNode (*backward)(const LoweringInputs& in) = nullptr;  // null: no backward
  // The backward reads the layer's own output, which the next layer's dX
  // then must not overwrite. (ReLU reads its output or its input, whichever
  // is still there: see relu_backward.)
  bool backward_reads_output = false;
  Activation activation = Activation::NUM_ACTIVATIONS;  // ACTIVATION_FWD's sub-kind
  // The tensors it owns; null: none (its output and gradient come anyway).
  void (*own)(const OwnedTensors& o, LayerTensors& t) = nullptr;
};

const LayerLowering& layer_lowering(LayerType t) noexcept;

// A COMPUTE node of `op` for model node `layer` (-1 for engine work).
GraphNode compute_node(ComputeOp op, std::vector<DTensorId> in, std::vector<DTensorId> out,
                       int layer);

}  // namespace tr

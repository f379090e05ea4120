// SPDX-License-Identifier: GPL-3.0-or-later
// What a kernel runs with besides its tensors, resolved by the compiler from
// the node's layer and the training settings and stored with the node (the
// habit of ggml's op_params): kernels read these, never the project.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/training_values.h>

#include "compile/ops.h"

namespace tr {

struct LayerNode;
struct ModelGraph;
struct TrainingSpec;
struct ComputationGraph;

// A BatchNorm layer's epsilon, for an op over several layers' tensors
// (found by DTensor::owner).
struct OwnerEps {
  int owner = -1;
  double eps = 1e-5;
};

struct NodeParams {
  std::string label;  // "'conv1' (Conv2d)", as messages name the layer; empty for engine work
  // Convolution and pooling window.
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t groups = 1;     // Conv2d: channel groups
  double eps = 1e-5;      // BatchNorm
  double momentum = 0.1;  // BatchNorm running statistics
  double p = 0.5;         // Dropout
  // ACTIVATION_FWD/BWD: which one, and LeakyReLU's slope for x < 0.
  Activation activation = Activation::NUM_ACTIVATIONS;
  double negative_slope = 0.01;
  int64_t heads = 1;                // attention: the heads the channels split into
  double attention_dropout = 0.0;   // attention: the probabilities' dropout rate
  std::vector<OwnerEps> owner_eps;  // BN_EQ_PARAMS: every layer its spans may hold

  // owner's eps from owner_eps, the default when it is not there.
  double eps_of(int owner) const;
};

// The run-wide constants: the same for every node of a compiled project.
struct TrainingConstants {
  OptimizerSpec optimizer;
  double ema_decay = 0.999;
  Precision precision = Precision::FP32;
  // BN statistics over the global batch (bound where the world is > 1).
  bool sync_batch_norm = false;
  // The loss's gradient is of the mean over this many ranks' samples: a
  // tensor-parallel group's (training.mesh.tensor), whose split layers add
  // up its ranks' gradients, each rank's loss being of its own samples.
  int loss_group = 1;

  bool amp() const noexcept { return precision == Precision::AMP; }
};

NodeParams layer_node_params(const LayerNode& layer);
TrainingConstants training_constants(const TrainingSpec& training);

// Every layer's eps (for BN_EQ_PARAMS, whose spans hold many layers' tensors).
std::vector<OwnerEps> every_layer_eps(const ModelGraph& model);

// Fills every node's params in `graphs` from its layer of `model` (and, for
// the ops over several layers' spans, their eps).
void resolve_node_params(std::vector<ComputationGraph>& graphs, const ModelGraph& model);

}  // namespace tr

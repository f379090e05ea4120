// SPDX-License-Identifier: GPL-3.0-or-later
// Which layers the compiler fuses (BN+ReLU, Add+ReLU), which features take their
// gradient in place (the consumer's dX overwrites them) and which outputs
// are computed again in the backward instead of kept, decided once from the
// model's graph so every variant's plan makes the same allocations.
#pragma once

#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape_inference.h>
#include "compile/compiler.h"

namespace tr {

struct LayerRewrite {
  int fused_relu = -1;  // BatchNorm2d or Add: the ReLU it computes
  int fused_into = -1;  // ReLU: the BatchNorm2d or Add that computes it
  bool grad_in_place = false;
  bool recompute_out = false;  // its forward runs again in the backward (CompileOptions::recompute)
  // MaxPool2d: keeps where each window's maximum was (INT8) for its
  // backward instead of its input and output (CompileOptions::pool_where).
  bool pool_where = false;
};

// One entry per model node. Throws ProjectError for a layer in
// options.recompute_layers that is not a candidate.
std::vector<LayerRewrite> plan_layer_rewrites(const Project& project, const ModelAnalysis& analysis,
                                              const CompileOptions& options);

// The layers a memory budget may recompute (CompileOptions::memory_budget):
// batch norms whose output (or their fused ReLU's) only weighted layers
// other than the first (for their weight gradient) and max pooling (for
// where each maximum was) read: an elementwise pass and a statistics pass
// over their input; and convolutions (not the first)
// whose output only batch norms read: a segment's forward, from an input
// that is kept or recomputed in turn (checkpointing), whose batch norms'
// backwards then read the copy. Each writes the same bits again (the same
// kernel on the same input), a batch norm's statistics included, which it
// writes again unchanged. Node indices, in the model's order.
std::vector<int> recompute_candidates(const Project& project, const ModelAnalysis& analysis,
                                      const std::vector<LayerRewrite>& rewrites);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// Which layers the compiler fuses (BN+ReLU), which features take their
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
  int fused_relu = -1;  // BatchNorm2d: the ReLU it computes
  int fused_into = -1;  // ReLU: the BatchNorm2d that computes it
  bool grad_in_place = false;
  bool recompute_out = false;  // its forward runs again in the backward (CompileOptions::recompute)
};

// One entry per model node.
std::vector<LayerRewrite> plan_layer_rewrites(const Project& project, const ModelAnalysis& analysis,
                                              const CompileOptions& options);

}  // namespace tr

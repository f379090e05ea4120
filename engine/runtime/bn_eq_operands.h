// SPDX-License-Identifier: GPL-3.0-or-later
// Finds, in the spans of a BN_EQ_PARAMS launch, each BN layer's statistics,
// weights and outputs, matched by owner (the spans list each kind in
// allocation order; the owner is what ties a statistic to its weights).
// Every backend's kernel reads its layers from here.
#pragma once

#include <vector>

#include "runtime/bn_eq_layer.h"
#include "runtime/kernel_args.h"

namespace tr {

// in_spans [B_PREV_MEAN..B_PREV_VAR, W_BN_BIAS..W_BN_WEIGHT], out_spans
// [B_EQ_SCALE..B_EQ_BIAS]; a layer missing any operand is left out.
std::vector<BnEqLayer> bn_eq_layers(const KernelArgs& a);

}  // namespace tr

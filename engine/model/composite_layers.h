// SPDX-License-Identifier: GPL-3.0-or-later
// Composite layers: a design's node that the compiler replaces by a chain of
// other layers (LayerSpec::parts). The project file and the designer keep
// the node; the plan, the graphs, checkpoints and ONNX see its parts, each
// named "<node>.<part>" and initialised, trained and saved as that layer
// would be on its own.
#pragma once

#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape_inference.h>

namespace tr {

// MultiHeadSelfAttention: `in_proj` (a TokenLinear to the 3C queries, keys
// and values), `attention` (SelfAttention) and `out_proj` (a TokenLinear back
// to C), as nn.MultiheadAttention names its parts.
std::vector<LayerNode> multi_head_attention_parts(const LayerNode& node, const Shape& input);

bool has_composite_layers(const ModelGraph& g);

// `design` with each composite node replaced, where it stood, by its parts
// (so every node keeps its place in the order, and a part the place the
// same layer would have in the design). `analysis` is the design's, valid.
Project expand_composite_layers(const Project& design, const ModelAnalysis& analysis);

}  // namespace tr

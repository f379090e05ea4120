// SPDX-License-Identifier: GPL-3.0-or-later
// One table entry per layer type: its name in the project file, its ports,
// whether it owns weights, its palette group and description, its parameters
// (file key, kind, bounds, where each lives in LayerParams, what it means),
// the id base, the parameters of a freshly placed node and its shape rule. The loader, the
// writer, the layer-type queries and the designer's palette and property
// editor read this table instead of switching over LayerType.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape.h>

namespace tr {

// What a shape rule is asked and answers (the rules: model/layer_shapes.h).
struct ShapeQuery {
  ShapeQuery(const LayerParams& p, const std::vector<Shape>& in) : params(p), inputs(in) {}

  const LayerParams& params;
  const std::vector<Shape>& inputs;  // one per input port, all known
  int64_t batch = 0;
  int64_t height = 0, width = 0;  // Input: other than 0, the variant's resolution
  int64_t classes = 0;            // the dataset's, for the loss
  // The answer: out starts as inputs[0] (or empty for Input).
  Shape out;
  int64_t param_count = 0;
  int64_t flops = 0;  // a multiply-add is 2
  // When the rule returns false: what is wrong, and the field it is about.
  std::string problem;
  std::string field;
};

using ShapeRule = bool (*)(ShapeQuery& q);

// A composite layer's parts, from the node and its input's shape: a chain of
// other layers, the first reading the node's input and the last giving its
// output, each with its id (the node's, a dot and the part's name) and
// part_of set. The compiler, the checkpoints and ONNX see the parts
// (model/composite_layers.h); the designer and the project file the node.
using PartsRule = std::vector<LayerNode> (*)(const LayerNode& node, const Shape& input);

enum class LayerGroup {
  InputOutput,
  Convolution,
  Normalisation,
  Activation,
  Pooling,
  Dense,
  Merge,
  Transformer
};

enum class LayerParamKind {
  Int,     // one integer
  Window,  // an integer or [height, width] (two LayerParams fields)
  Number,  // a real number
  Bool,
};

struct ParamSpec {
  std::string_view key{};  // in the file's "params"
  LayerParamKind kind = LayerParamKind::Int;
  bool required = false;
  // Int and Window: the integers allowed.
  int64_t min = 0, max = 0;
  // Number: the values allowed (an open end excludes its bound) and the
  // finite range the designer's editor offers inside them.
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  double edit_lo = 0, edit_hi = 0;
  // Where the value lives. Window: int_field is the height, int_field_w
  // the width, and field_h/field_w their names in the designer.
  int64_t LayerParams::*int_field = nullptr;
  int64_t LayerParams::*int_field_w = nullptr;
  double LayerParams::*number_field = nullptr;
  bool LayerParams::*bool_field = nullptr;
  std::string_view field_h{}, field_w{};
  std::string_view description{};
  // How a one-line summary shows it ("k3", "s2", "p=0.5"); not at all when
  // summarised is false. A Bool shows only when false ("no-bias").
  std::string_view tag{};
  bool summarised = true;
};

// How a layer's ONNX form reads its input (onnx_export.cpp): an NCHW image
// (or a [N, features] matrix), tokens [N, T, C] as PyTorch's transformers
// write them, or whichever form its input has (per-element and per-channel
// layers).
enum class OnnxInput { Image, Tokens, Same };

struct LayerSpec {
  LayerType type = LayerType::Input;
  std::string_view name;     // in the project file
  std::string_view id_base;  // a new node's id: "conv" -> conv1, conv2, ...
  int inputs = 1, outputs = 1;
  // Set: the node's input ports are this parameter (Concat's `inputs`), and
  // `inputs` above is the least.
  int64_t LayerParams::*input_count = nullptr;
  bool has_weights = false;
  LayerGroup group = LayerGroup::Dense;
  std::string_view description;  // one sentence, for the palette and the docs
  // What a designer's node shows for a name that leaves its id too little
  // room ("MHSA"); empty: the name always.
  std::string_view abbreviation;
  std::span<const ParamSpec> params;
  LayerParams defaults;  // a freshly placed node's (valid) parameters
  // Pooling: a missing stride is the kernel (as in PyTorch), not 1.
  bool stride_defaults_to_kernel = false;
  OnnxInput onnx_input = OnnxInput::Image;
  // Output shape, parameter count and FLOPs (model/layer_shapes.h).
  ShapeRule shape = nullptr;
  // Set for a composite layer: what stands in its place once compiled.
  PartsRule parts = nullptr;
};

// The entry of `t`; every LayerType has one (checked at compile time).
const LayerSpec& layer_spec(LayerType t) noexcept;
std::span<const LayerSpec> layer_specs() noexcept;

// The input ports of `node`: its type's, or its own count where the type
// takes that as a parameter.
int layer_input_ports(const LayerNode& node) noexcept;

// A layer's parameters in a few characters: "16 k3 s1 p1", "28x28x1",
// "p=0.5" (the plan's tables) or, in the designer's style, "16 · k3 · s1 · p1".
struct SummaryStyle {
  std::string_view separator = " ";
  std::string_view times = "x";       // between the parts of a size
  std::string_view number_tag = "=";  // between a number's tag and its value
  std::string_view negation = "no-";  // before a Bool that is off
};
std::string layer_summary(const LayerNode& node, const SummaryStyle& style = {});

// The table as docs/project-format.md shows it (Markdown, one row a type):
// `renaissance-cli layers` prints it, and a test keeps the document equal.
std::string layer_table_markdown();

}  // namespace tr

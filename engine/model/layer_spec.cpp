// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/layer_spec.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include <renaissance/project_limits.h>

#include "model/composite_layers.h"
#include "model/json_text.h"
#include "model/layer_shapes.h"

namespace tr {

namespace {

using namespace limits;
using json_text::kInf;
using json_text::number_text;

// An integer; one that may be left out keeps the node's default, and shows
// in the summary under `tag` when it is away from it.
constexpr ParamSpec int_param(std::string_view key, int64_t lo, int64_t hi,
                              int64_t LayerParams::*field, std::string_view what,
                              bool required = true, std::string_view tag = {}) {
  return {.key = key,
          .kind = LayerParamKind::Int,
          .required = required,
          .min = lo,
          .max = hi,
          .int_field = field,
          .description = what,
          .tag = tag};
}

constexpr ParamSpec window_param(std::string_view key, std::string_view tag, bool required,
                                 int64_t lo, int64_t hi, int64_t LayerParams::*h,
                                 int64_t LayerParams::*w, std::string_view field_h,
                                 std::string_view field_w, std::string_view what) {
  return {.key = key,
          .kind = LayerParamKind::Window,
          .required = required,
          .min = lo,
          .max = hi,
          .int_field = h,
          .int_field_w = w,
          .field_h = field_h,
          .field_w = field_w,
          .description = what,
          .tag = tag};
}

// A number the summary shows under `tag`, or (empty tag) not at all.
constexpr ParamSpec number_param(std::string_view key, std::string_view tag, double lo,
                                 bool lo_open, double hi, bool hi_open, double edit_lo,
                                 double edit_hi, double LayerParams::*field,
                                 std::string_view what) {
  return {.key = key,
          .kind = LayerParamKind::Number,
          .lo = lo,
          .hi = hi,
          .lo_open = lo_open,
          .hi_open = hi_open,
          .edit_lo = edit_lo,
          .edit_hi = edit_hi,
          .number_field = field,
          .description = what,
          .tag = tag,
          .summarised = !tag.empty()};
}

constexpr ParamSpec bias_param() {
  return {.key = "bias",
          .kind = LayerParamKind::Bool,
          .bool_field = &LayerParams::bias,
          .description = "adds a trained bias per output",
          .summarised = true};
}

constexpr ParamSpec kInputParams[] = {
    int_param("height", 1, kMaxExtent, &LayerParams::height, "image height in pixels"),
    int_param("width", 1, kMaxExtent, &LayerParams::width, "image width in pixels"),
    int_param("channels", 1, kMaxExtent, &LayerParams::channels, "colour channels"),
};

constexpr ParamSpec kKernel =
    window_param("kernel", "k", true, 1, kMaxKernel, &LayerParams::kernel_h, &LayerParams::kernel_w,
                 "kernel_h", "kernel_w", "window height and width");
constexpr ParamSpec kStride =
    window_param("stride", "s", false, 1, kMaxStride, &LayerParams::stride_h,
                 &LayerParams::stride_w, "stride_h", "stride_w", "step between windows");
constexpr ParamSpec kPadding =
    window_param("padding", "p", false, 0, kMaxPadding, &LayerParams::pad_h, &LayerParams::pad_w,
                 "pad_h", "pad_w", "zeros added on each side");

constexpr ParamSpec kConvParams[] = {
    int_param("out_channels", 1, kMaxFeatures, &LayerParams::out_channels, "output channels"),
    kKernel,
    kStride,
    kPadding,
    int_param("groups", 1, kMaxFeatures, &LayerParams::groups,
              "channel groups: each convolves in/groups input channels into out/groups outputs "
              "(in_channels: depthwise)",
              false, "g"),
    bias_param(),
};

constexpr ParamSpec kEps =
    number_param("eps", "", 0, true, kInf, false, 1e-10, 1.0, &LayerParams::eps,
                 "added to the variance before the square root");

constexpr ParamSpec kLayerNormParams[] = {kEps};

constexpr ParamSpec kBatchNormParams[] = {
    kEps,
    number_param("momentum", "", 0, false, 1, false, 0.0, 1.0, &LayerParams::momentum,
                 "weight of the new batch in the running statistics"),
};

constexpr ParamSpec kPoolParams[] = {kKernel, kStride, kPadding};

constexpr ParamSpec kDropoutParams[] = {
    number_param("p", "p", 0, false, 1, true, 0.0, 0.99, &LayerParams::p,
                 "probability of zeroing each value while training"),
};

constexpr ParamSpec kLeakyReluParams[] = {
    number_param("negative_slope", "slope", 0, false, 1, true, 0.0, 0.99,
                 &LayerParams::negative_slope, "the slope for negative inputs"),
};

constexpr ParamSpec kConcatParams[] = {
    int_param("inputs", 2, kMaxInputPorts, &LayerParams::inputs,
              "how many inputs it joins: ports 0 to inputs - 1, in channel order", false, "in"),
};

constexpr ParamSpec kLinearParams[] = {
    int_param("out_features", 1, kMaxFeatures, &LayerParams::out_channels, "output features"),
    bias_param(),
};

constexpr ParamSpec heads_param() {
  return int_param("heads", 1, kMaxFeatures, &LayerParams::heads,
                   "heads the C channels split into, each C/heads wide (at most 512)", true,
                   "heads ");
}

constexpr ParamSpec attention_dropout_param() {
  return number_param("dropout", "", 0, false, 1, true, 0.0, 0.99, &LayerParams::attention_dropout,
                      "probability of dropping each attention probability while training (the "
                      "kept ones scaled by 1 / (1 - dropout)); the backward draws the same mask "
                      "again");
}

constexpr ParamSpec kAttentionParams[] = {heads_param(), attention_dropout_param()};

constexpr ParamSpec kMultiHeadAttentionParams[] = {
    heads_param(),
    attention_dropout_param(),
    {.key = "bias",
     .kind = LayerParamKind::Bool,
     .bool_field = &LayerParams::bias,
     .description = "adds trained biases to both projections",
     .summarised = true},
};

constexpr ParamSpec kTokenPoolParams[] = {
    {.key = "class_token",
     .kind = LayerParamKind::Bool,
     .bool_field = &LayerParams::class_token,
     .description = "takes the first token (a ClassToken's); false: the mean of the tokens",
     .summarised = true},
};

constexpr LayerParams attention_defaults() {
  LayerParams p;
  p.heads = 4;
  return p;
}

constexpr LayerParams input_defaults() {
  LayerParams p;
  p.height = 28;
  p.width = 28;
  p.channels = 1;
  return p;
}

constexpr LayerParams conv_defaults() {
  LayerParams p;
  p.out_channels = 16;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  return p;
}

constexpr LayerParams pool_defaults() {
  LayerParams p;
  p.kernel_h = p.kernel_w = 2;
  p.stride_h = p.stride_w = 2;
  return p;
}

constexpr LayerParams linear_defaults() {
  LayerParams p;
  p.out_channels = 10;
  return p;
}

constexpr LayerSpec spec(LayerType type, std::string_view name, std::string_view id_base,
                         ShapeRule shape, int inputs, int outputs, bool weights, LayerGroup group,
                         std::string_view description, std::span<const ParamSpec> params = {},
                         LayerParams defaults = {}, bool stride_defaults_to_kernel = false) {
  LayerSpec s;
  s.type = type;
  s.name = name;
  s.id_base = id_base;
  s.shape = shape;
  s.inputs = inputs;
  s.outputs = outputs;
  s.has_weights = weights;
  s.group = group;
  s.description = description;
  s.params = params;
  s.defaults = defaults;
  s.stride_defaults_to_kernel = stride_defaults_to_kernel;
  return s;
}

constexpr LayerSpec onnx_reads(LayerSpec s, OnnxInput form) {
  s.onnx_input = form;
  return s;
}

constexpr LayerSpec multi_head_attention_spec() {
  LayerSpec s = onnx_reads(
      spec(LayerType::MultiHeadSelfAttention, "MultiHeadSelfAttention", "mhsa",
           &multi_head_attention_shape, 1, 1, true, LayerGroup::Transformer,
           "Multi-head self-attention as nn.MultiheadAttention computes it: each token projected "
           "to its queries, keys and values, scaled dot-product attention among the tokens per "
           "head, and an output projection: [N,H,W,C] -> [N,H,W,C]; the T x T scores are never "
           "stored. Compiled as its three parts (in_proj, attention, out_proj).",
           kMultiHeadAttentionParams, attention_defaults()),
      OnnxInput::Tokens);
  s.parts = &multi_head_attention_parts;
  s.abbreviation = "MHSA";
  return s;
}

constexpr LayerSpec concat_spec() {
  LayerSpec s =
      spec(LayerType::Concat, "Concat", "concat", &concat_shape, 2, 1, false, LayerGroup::Merge,
           "Joins 2 to 8 inputs of the same height and width along the channels, in "
           "port order.",
           kConcatParams);
  s.input_count = &LayerParams::inputs;
  return s;
}

// In LayerType order.
constexpr LayerSpec kSpecs[] = {
    spec(LayerType::Input, "Input", "input", &input_shape, 0, 1, false, LayerGroup::InputOutput,
         "The batch of images the model reads (height, width, channels); exactly one.",
         kInputParams, input_defaults()),
    spec(LayerType::Conv2d, "Conv2d", "conv", &conv_shape, 1, 1, true, LayerGroup::Convolution,
         "2-D convolution: output channels, kernel, stride, padding, groups (grouped and "
         "depthwise), bias.",
         kConvParams, conv_defaults()),
    spec(LayerType::BatchNorm2d, "BatchNorm2d", "bn", &batch_norm_shape, 1, 1, true,
         LayerGroup::Normalisation,
         "Batch normalisation over each channel (scale and shift are trained).", kBatchNormParams),
    onnx_reads(spec(LayerType::ReLU, "ReLU", "relu", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "max(0, x)"),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::Tanh, "Tanh", "tanh", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "Hyperbolic tangent."),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::SiLU, "SiLU", "silu", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "x · sigmoid(x)"),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::ReLU6, "ReLU6", "relu6", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "min(max(0, x), 6)"),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::LeakyReLU, "LeakyReLU", "lrelu", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "x for x > 0, negative_slope · x otherwise.",
                    kLeakyReluParams),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::GELU, "GELU", "gelu", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation,
                    "x · Φ(x), Φ the standard normal distribution function (exact, with erf)."),
               OnnxInput::Same),
    onnx_reads(spec(LayerType::Sigmoid, "Sigmoid", "sigmoid", &elementwise_shape, 1, 1, false,
                    LayerGroup::Activation, "1 / (1 + exp(-x))"),
               OnnxInput::Same),
    spec(LayerType::MaxPool2d, "MaxPool2d", "maxpool", &pool_shape, 1, 1, false,
         LayerGroup::Pooling, "Maximum over a window: kernel, stride, padding.", kPoolParams,
         pool_defaults(), true),
    spec(LayerType::AvgPool2d, "AvgPool2d", "avgpool", &pool_shape, 1, 1, false,
         LayerGroup::Pooling, "Average over a window: kernel, stride, padding.", kPoolParams,
         pool_defaults(), true),
    spec(LayerType::GlobalAvgPool, "GlobalAvgPool", "gap", &global_pool_shape, 1, 1, false,
         LayerGroup::Pooling, "Average over the whole height and width: [N,H,W,C] -> [N,1,1,C]."),
    onnx_reads(spec(LayerType::Dropout, "Dropout", "dropout", &elementwise_shape, 1, 1, false,
                    LayerGroup::Normalisation,
                    "Zeroes each value with probability p while training.", kDropoutParams),
               OnnxInput::Same),
    spec(LayerType::Flatten, "Flatten", "flatten", &flatten_shape, 1, 1, false, LayerGroup::Dense,
         "[N,H,W,C] -> [N,1,1,H·W·C] in NHWC order."),
    spec(LayerType::Linear, "Linear", "fc", &linear_shape, 1, 1, true, LayerGroup::Dense,
         "Fully connected layer: output features, bias.", kLinearParams, linear_defaults()),
    onnx_reads(spec(LayerType::Add, "Add", "add", &add_shape, 2, 1, false, LayerGroup::Merge,
                    "Adds two inputs of the same shape (residual connections)."),
               OnnxInput::Same),
    concat_spec(),
    onnx_reads(
        spec(LayerType::LayerNorm, "LayerNorm", "ln", &layer_norm_shape, 1, 1, true,
             LayerGroup::Transformer,
             "Layer normalisation over the channels of each position (a token's features), with a "
             "trained scale and shift per channel.",
             kLayerNormParams),
        OnnxInput::Same),
    multi_head_attention_spec(),
    onnx_reads(
        spec(LayerType::TokenLinear, "TokenLinear", "tfc", &token_linear_shape, 1, 1, true,
             LayerGroup::Transformer,
             "A Linear applied to each position's channels (each token's features) with one weight "
             "matrix for all: [N,H,W,C] -> [N,H,W,out_features] (a 1x1 convolution).",
             kLinearParams, linear_defaults()),
        OnnxInput::Tokens),
    onnx_reads(
        spec(LayerType::SelfAttention, "SelfAttention", "attn", &self_attention_shape, 1, 1, false,
             LayerGroup::Transformer,
             "Multi-head scaled dot-product attention among the positions (tokens) of its input, "
             "which holds each token's queries, keys and values side by side: [N,H,W,3C] -> "
             "[N,H,W,C] (a TokenLinear to 3C before it); the T x T scores are never stored.",
             kAttentionParams, attention_defaults()),
        OnnxInput::Tokens),
    onnx_reads(
        spec(
            LayerType::PositionEmbedding, "PositionEmbedding", "pos", &position_embedding_shape, 1,
            1, true, LayerGroup::Transformer,
            "Adds a learned value for every position and channel to every sample: where each token "
            "is, for the attention that follows."),
        OnnxInput::Tokens),
    onnx_reads(
        spec(LayerType::ClassToken, "ClassToken", "cls", &class_token_shape, 1, 1, true,
             LayerGroup::Transformer,
             "Puts a learned token before the positions: [N,H,W,C] -> [N,1,1+H·W,C], the positions "
             "in row order; a TokenPool takes it back out."),
        OnnxInput::Tokens),
    onnx_reads(
        spec(LayerType::TokenPool, "TokenPool", "tpool", &token_pool_shape, 1, 1, false,
             LayerGroup::Transformer,
             "One token for the classifier: the first (a ClassToken's) or the mean of them all: "
             "[N,H,W,C] -> [N,1,1,C].",
             kTokenPoolParams),
        OnnxInput::Tokens),
    spec(LayerType::SoftmaxCrossEntropy, "SoftmaxCrossEntropy", "loss", &loss_shape, 1, 0, false,
         LayerGroup::InputOutput,
         "The loss: softmax and cross-entropy over the classes; exactly one."),
};

constexpr bool in_type_order() {
  for (size_t i = 0; i < std::size(kSpecs); ++i)
    if (static_cast<size_t>(kSpecs[i].type) != i || kAllLayerTypes[i] != kSpecs[i].type)
      return false;
  return true;
}
static_assert(std::size(kSpecs) == std::size(kAllLayerTypes),
              "every LayerType needs its entry in kSpecs");
// (That each has a shape rule, engine.compiler checks: comparing function
// pointers is not a constant expression under UBSan.)
static_assert(in_type_order(), "kSpecs lists the layer types in their enum order");

// "`stride` (1; 1..65536): step between windows"
std::string param_cell(const LayerSpec& spec, const ParamSpec& p) {
  static const LayerParams file_defaults{};
  std::string s = "`" + std::string(p.key) + "` (";
  switch (p.kind) {
    case LayerParamKind::Int:
    case LayerParamKind::Window:
      if (p.required)
        s += "**required**";
      else if (spec.stride_defaults_to_kernel && p.int_field == &LayerParams::stride_h)
        s += "= kernel";
      else
        s += std::to_string(file_defaults.*p.int_field);
      s += "; " + std::to_string(p.min) + ".." + std::to_string(p.max);
      if (p.kind == LayerParamKind::Window) s += ", or `[h, w]`";
      break;
    case LayerParamKind::Number:
      s += number_text(file_defaults.*p.number_field) + "; " +
           json_text::Range{p.lo, p.lo_open, p.hi, p.hi_open}.bounds();
      break;
    case LayerParamKind::Bool:
      s += file_defaults.*p.bool_field ? "true" : "false";
      break;
  }
  return s + "): " + std::string(p.description);
}

}  // namespace

std::string layer_summary(const LayerNode& node, const SummaryStyle& style) {
  const LayerParams& lp = node.params;
  auto size = [&](int64_t h, int64_t w) {
    return h == w ? std::to_string(h)
                  : std::to_string(h) + std::string(style.times) + std::to_string(w);
  };
  std::string out;
  bool after_int = false;  // consecutive integers are one size: 28x28x1
  for (const ParamSpec& p : layer_spec(node.type).params) {
    if (!p.summarised) continue;
    std::string part;
    switch (p.kind) {
      case LayerParamKind::Int:
        if (!p.tag.empty()) {
          // A tagged setting (Conv2d's groups) shows only away from its default: "g32".
          after_int = false;
          if (lp.*p.int_field == LayerParams{}.*p.int_field) continue;
          out += (out.empty() ? "" : std::string(style.separator)) + std::string(p.tag) +
                 std::to_string(lp.*p.int_field);
          continue;
        }
        if (after_int) {
          out += std::string(style.times) + std::to_string(lp.*p.int_field);
          continue;
        }
        part = std::to_string(lp.*p.int_field);
        break;
      case LayerParamKind::Window:
        part = std::string(p.tag) + size(lp.*p.int_field, lp.*p.int_field_w);
        break;
      case LayerParamKind::Number:
        part = std::string(p.tag) + std::string(style.number_tag) + number_text(lp.*p.number_field);
        break;
      case LayerParamKind::Bool:
        if (lp.*p.bool_field) {
          after_int = false;
          continue;
        }
        part = std::string(style.negation) + std::string(p.key);
        break;
    }
    after_int = p.kind == LayerParamKind::Int;
    out += (out.empty() ? "" : std::string(style.separator)) + part;
  }
  return out;
}

std::string layer_table_markdown() {
  std::string out =
      "| type | ports in/out | weights | params (default; allowed) | what it does |\n";
  out += "|---|---|---|---|---|\n";
  for (const LayerSpec& spec : kSpecs) {
    std::string params;
    for (const ParamSpec& p : spec.params)
      params += (params.empty() ? "" : "; ") + param_cell(spec, p);
    const std::string ins = std::to_string(spec.inputs) +
                            (spec.input_count ? "-" + std::to_string(kMaxInputPorts) : "");
    out += "| `" + std::string(spec.name) + "` | " + ins + "/" + std::to_string(spec.outputs) +
           " | " + (spec.has_weights ? "yes" : "") + " | " + (params.empty() ? "none" : params) +
           " | " + std::string(spec.description) + " |\n";
  }
  return out;
}

const LayerSpec& layer_spec(LayerType t) noexcept {
  return kSpecs[static_cast<size_t>(t)];
}

std::span<const LayerSpec> layer_specs() noexcept {
  return kSpecs;
}

int layer_input_ports(const LayerNode& node) noexcept {
  const LayerSpec& s = layer_spec(node.type);
  if (!s.input_count) return s.inputs;
  // The loader and the designer keep the count in bounds; a half-edited
  // value still draws a sane number of ports.
  const int64_t n = node.params.*s.input_count;
  return static_cast<int>(std::clamp<int64_t>(n, s.inputs, kMaxInputPorts));
}

}  // namespace tr

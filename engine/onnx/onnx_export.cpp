// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX writer: walks the analysed model in topological order, turning
// each NHWC layer into ONNX's NCHW operators with the checkpoint's weights
// re-laid out: convolution kernels [O,KH,KW,I] -> [O,I,KH,KW], and the first
// Linear after a spatial tensor with its columns reordered from our HWC
// flatten order to ONNX's CHW one. Transformer layers read and write tokens
// [N, T, C] in the forms PyTorch 1.13 writes (the table's OnnxInput says
// which form each layer reads), so our export imports again.
#include <renaissance/onnx_export.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/shape_inference.h>
#include "model/composite_layers.h"
#include "onnx/onnx_layout.h"
#include "onnx/onnx_metadata.h"

namespace tr {

namespace {

constexpr int64_t kOpset = 13;

// The names the file records: the caller's, else the project's where it
// knows them; none rather than invented ones.
std::vector<std::string> class_names(const DatasetSpec& d, const OnnxExportOptions& options,
                                     int64_t classes) {
  const auto fits = [&](const std::vector<std::string>& v) {
    return static_cast<int64_t>(v.size()) == classes;
  };
  if (!options.class_names.empty()) {
    if (!fits(options.class_names))
      throw UsageError("the model has " + std::to_string(classes) + " classes but " +
                       std::to_string(options.class_names.size()) + " class names were given");
    return options.class_names;
  }
  const DatasetKindInfo& info = dataset_kind_info(d.kind);
  if (d.classes == classes &&
      (fits(d.class_names) || info.class_names || d.kind == DatasetKind::Synthetic))
    return dataset_class_names(d);
  return {};
}
constexpr int64_t kIrVersion = 7;  // the IR of opset 13

// The checkpoint's tensors by name in the series that matter here.
class Weights {
 public:
  Weights(const Checkpoint& c, bool ema) {
    for (const CheckpointTensor& t : c.tensors) {
      if (t.region.rfind("W_", 0) == 0) master_[t.name] = &t;
      if (t.region.rfind("E_", 0) == 0) ema_[t.name] = &t;
      if (t.region == "B_PREV_MEAN" || t.region == "B_PREV_VAR") stats_[t.name] = &t;
    }
    use_ema_ = ema && !ema_.empty();
  }
  bool used_ema() const { return use_ema_; }

  // `name`'s values, checked to hold `count` of them.
  const std::vector<float>& get(const std::string& name, int64_t count) const {
    const CheckpointTensor* t = find(name);
    if (!t)
      throw UsageError("the checkpoint has no tensor '" + name +
                       "': it was saved from another model (train this project, or export with "
                       "the project the checkpoint came from)");
    if (static_cast<int64_t>(t->values.size()) != count)
      throw UsageError("the checkpoint's '" + name + "' holds " + std::to_string(t->values.size()) +
                       " values but the project's layer needs " + std::to_string(count) +
                       ": the checkpoint is from another version of the model");
    return t->values;
  }

 private:
  const CheckpointTensor* find(const std::string& name) const {
    if (auto s = stats_.find(name); s != stats_.end()) return s->second;
    if (use_ema_)
      if (auto e = ema_.find(name); e != ema_.end()) return e->second;
    auto m = master_.find(name);
    return m == master_.end() ? nullptr : m->second;
  }
  std::map<std::string, const CheckpointTensor*> master_, ema_, stats_;
  bool use_ema_ = false;
};

class Writer {
 public:
  explicit Writer(const Weights& w) : weights_(w) {}

  onnx::GraphProto& graph() { return graph_; }
  int64_t nodes() const { return graph_.node_size(); }
  int64_t initializers() const { return graph_.initializer_size(); }
  int64_t parameters() const { return parameters_; }

  void initializer(const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) {
    onnx::TensorProto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(values.data(), values.size() * sizeof(float));
    parameters_ += static_cast<int64_t>(values.size());
  }
  // An int64 scalar (an index): no parameters.
  std::string integer_scalar(const std::string& name, int64_t v) {
    onnx::TensorProto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_int64_data(v);
    return name;
  }
  // An int64 tensor (a shape, split sizes): no parameters.
  std::string integers(const std::string& name, const std::vector<int64_t>& values) {
    onnx::TensorProto* t = graph_.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }
  std::string scalar(const std::string& name, float v) {
    initializer(name, {}, {v});
    return name;
  }

  onnx::NodeProto& node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& in, const std::string& out) {
    onnx::NodeProto* n = graph_.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return *n;
  }
  static void ints(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto& n, const char* name, int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void real(onnx::NodeProto& n, const char* name, double v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }

  const Weights& weights() const { return weights_; }

 private:
  const Weights& weights_;
  onnx::GraphProto graph_;
  int64_t parameters_ = 0;
};

// One value per feature of a [N, features] matrix, in ONNX's order: a
// flattened image's features are CHW there, HWC here.
std::vector<float> feature_order(std::vector<float> v, bool flat, const Shape& order) {
  return flat && orders_differ(order) ? columns_to_chw(v, 1, order) : v;
}

void value_info(onnx::ValueInfoProto* v, const std::string& name,
                const std::vector<std::string>& symbolic, const std::vector<int64_t>& dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto* s = t->mutable_shape();
  for (const std::string& d : symbolic) s->add_dim()->set_dim_param(d);
  for (int64_t d : dims) s->add_dim()->set_dim_value(d);
}

}  // namespace

OnnxExportSummary export_onnx(const Project& design, const Checkpoint& checkpoint,
                              const std::string& path, const OnnxExportOptions& options) {
  const ModelAnalysis designed = analyze_model(design, 1);
  require_valid(designed);
  // The layers as compiled, whose names the checkpoint's tensors carry: a
  // composite layer is written as its parts (the importer folds them back).
  const Project project =
      has_composite_layers(design.model) ? expand_composite_layers(design, designed) : design;
  const ModelAnalysis a = analyze_model(project, 1);
  require_valid(a);
  const ModelGraph& g = project.model;
  const Weights weights(checkpoint, options.ema && project.training.ema);
  Writer w(weights);
  onnx::GraphProto& graph = w.graph();
  graph.set_name(project.name);

  // Each node's output value: an NCHW image, a [N, features] matrix (orders.flat) or, where
  // `tokens`, [N, T, C] tokens as PyTorch's transformers write them.
  std::vector<std::string> value(g.nodes.size());
  std::vector<bool> tokens(g.nodes.size(), false);
  const FeatureOrders orders = feature_orders(g, a);
  auto input_of = [&](int node, int port) {
    const PortRef& r = a.source_of(node, port);
    return r.node;
  };
  // Node `src`'s output in the other form, written once for all its readers.
  std::map<int, std::string> as_tokens, as_image;
  auto tokens_of = [&](int src) -> std::string {
    const size_t s = static_cast<size_t>(src);
    if (tokens[s]) return value[s];
    if (auto it = as_tokens.find(src); it != as_tokens.end()) return it->second;
    const Shape o = a.nodes[s].output;
    const std::string base = value[s];
    if (orders.flat[s]) {  // [N, F] -> one token [N, 1, F]
      w.node("Reshape", base + "/tokens",
             {base, w.integers(base + "/tokens_shape", {0, 1, o.per_sample()})}, base + "/tokens");
    } else {  // [N, C, H, W] -> [N, C, H*W] -> [N, H*W, C], as torchvision's ViT writes it
      w.node("Reshape", base + "/positions",
             {base, w.integers(base + "/positions_shape", {0, o.c, o.h * o.w})},
             base + "/positions");
      Writer::ints(w.node("Transpose", base + "/tokens", {base + "/positions"}, base + "/tokens"),
                   "perm", {0, 2, 1});
    }
    return as_tokens[src] = base + "/tokens";
  };
  auto image_of = [&](int src) -> std::string {
    const size_t s = static_cast<size_t>(src);
    if (!tokens[s]) return value[s];
    if (auto it = as_image.find(src); it != as_image.end()) return it->second;
    const Shape o = a.nodes[s].output;
    const std::string base = value[s];
    Writer::ints(w.node("Transpose", base + "/channels", {base}, base + "/channels"), "perm",
                 {0, 2, 1});
    w.node("Reshape", base + "/image",
           {base + "/channels", w.integers(base + "/image_shape", {0, o.c, o.h, o.w})},
           base + "/image");
    return as_image[src] = base + "/image";
  };

  const LayerNode& in_node = g.nodes[static_cast<size_t>(a.input_node)];
  const Shape in_shape = a.nodes[static_cast<size_t>(a.input_node)].output;
  value[static_cast<size_t>(a.input_node)] = in_node.id;
  value_info(graph.add_input(), in_node.id, {"N"}, {in_shape.c, in_shape.h, in_shape.w});

  int logits_node = -1;
  for (int i : a.order) {
    const LayerNode& n = g.nodes[static_cast<size_t>(i)];
    const NodeAnalysis& na = a.nodes[static_cast<size_t>(i)];
    const size_t k = static_cast<size_t>(i);
    if (n.type == LayerType::Input) continue;
    const int src = input_of(i, 0);
    // The form the layer reads: its own, or its inputs' (tokens if any input is).
    const OnnxInput form = layer_spec(n.type).onnx_input;
    bool on_tokens = form == OnnxInput::Tokens;
    for (int port = 0; form == OnnxInput::Same && port < layer_input_ports(n); ++port)
      on_tokens = on_tokens || tokens[static_cast<size_t>(input_of(i, port))];
    const auto operand = [&](int port) {
      const int from = input_of(i, port);
      return on_tokens ? tokens_of(from) : image_of(from);
    };
    const std::string x = n.type == LayerType::SoftmaxCrossEntropy ? "" : operand(0);
    tokens[k] = on_tokens && n.type != LayerType::TokenPool;
    const std::string& id = n.id;
    const LayerParams& p = n.params;
    value[k] = id;
    switch (n.type) {
      case LayerType::Input:
        break;
      case LayerType::TokenLinear: {
        // MatMul by W^T [C, out] (and Add the bias), as PyTorch writes nn.Linear on tokens.
        const int64_t c = na.inputs[0].c, o = p.out_channels;
        const std::vector<float>& m = weights.get(id + ".weight", o * c);
        std::vector<float> mt(m.size());
        for (int64_t r = 0; r < o; ++r)
          for (int64_t q = 0; q < c; ++q)
            mt[static_cast<size_t>(q * o + r)] = m[static_cast<size_t>(r * c + q)];
        w.initializer(id + ".weight", {c, o}, mt);
        const std::string product = p.bias ? id + "/matmul" : id;
        w.node("MatMul", product, {x, id + ".weight"}, product);
        if (p.bias) {
          w.initializer(id + ".bias", {o}, weights.get(id + ".bias", o));
          w.node("Add", id, {product, id + ".bias"}, id);
        }
        break;
      }
      case LayerType::Conv2d: {
        const Shape s = na.inputs[0];
        const int64_t ig = s.c / p.groups;
        const std::vector<float>& kernel =
            weights.get(id + ".weight", p.out_channels * p.kernel_h * p.kernel_w * ig);
        w.initializer(id + ".weight", {p.out_channels, ig, p.kernel_h, p.kernel_w},
                      kernel_to_oihw(kernel, p.out_channels, p.kernel_h, p.kernel_w, ig));
        std::vector<std::string> ins{x, id + ".weight"};
        if (p.bias) {
          w.initializer(id + ".bias", {p.out_channels}, weights.get(id + ".bias", p.out_channels));
          ins.push_back(id + ".bias");
        }
        onnx::NodeProto& c = w.node("Conv", id, ins, id);
        Writer::ints(c, "kernel_shape", {p.kernel_h, p.kernel_w});
        Writer::ints(c, "strides", {p.stride_h, p.stride_w});
        Writer::ints(c, "pads", {p.pad_h, p.pad_w, p.pad_h, p.pad_w});
        Writer::ints(c, "dilations", {1, 1});
        Writer::integer(c, "group", p.groups);
        break;
      }
      case LayerType::BatchNorm2d: {
        const int64_t c = na.inputs[0].c;
        for (const char* part : {".weight", ".bias", ".running_mean", ".running_var"})
          w.initializer(id + part, {c}, weights.get(id + part, c));
        onnx::NodeProto& b = w.node(
            "BatchNormalization", id,
            {x, id + ".weight", id + ".bias", id + ".running_mean", id + ".running_var"}, id);
        Writer::real(b, "epsilon", p.eps);
        Writer::real(b, "momentum", 1.0 - p.momentum);  // ONNX weighs the old estimate
        break;
      }
      case LayerType::ReLU:
        w.node("Relu", id, {x}, id);
        break;
      case LayerType::Tanh:
        w.node("Tanh", id, {x}, id);
        break;
      case LayerType::Sigmoid:
        w.node("Sigmoid", id, {x}, id);
        break;
      case LayerType::SiLU:
        w.node("Sigmoid", id + "/sigmoid", {x}, id + "/sigmoid");
        w.node("Mul", id, {x, id + "/sigmoid"}, id);
        break;
      case LayerType::GELU: {
        // 0.5 x (1 + erf(x / sqrt 2)), as our kernels compute it
        w.node("Div", id + "/scaled", {x, w.scalar(id + "/sqrt2", std::sqrt(2.0f))},
               id + "/scaled");
        w.node("Erf", id + "/erf", {id + "/scaled"}, id + "/erf");
        w.node("Add", id + "/one_plus", {id + "/erf", w.scalar(id + "/one", 1.0f)},
               id + "/one_plus");
        w.node("Mul", id + "/times_x", {x, id + "/one_plus"}, id + "/times_x");
        w.node("Mul", id, {id + "/times_x", w.scalar(id + "/half", 0.5f)}, id);
        break;
      }
      case LayerType::ReLU6:
        w.node("Clip", id, {x, w.scalar(id + "/min", 0.0f), w.scalar(id + "/max", 6.0f)}, id);
        break;
      case LayerType::LeakyReLU:
        Writer::real(w.node("LeakyRelu", id, {x}, id), "alpha", p.negative_slope);
        break;
      case LayerType::MaxPool2d:
      case LayerType::AvgPool2d: {
        const bool max = n.type == LayerType::MaxPool2d;
        onnx::NodeProto& q = w.node(max ? "MaxPool" : "AveragePool", id, {x}, id);
        Writer::ints(q, "kernel_shape", {p.kernel_h, p.kernel_w});
        Writer::ints(q, "strides", {p.stride_h, p.stride_w});
        Writer::ints(q, "pads", {p.pad_h, p.pad_w, p.pad_h, p.pad_w});
        if (!max) Writer::integer(q, "count_include_pad", 1);  // as torch's default and ours
        break;
      }
      case LayerType::GlobalAvgPool:
        w.node("GlobalAveragePool", id, {x}, id);
        break;
      case LayerType::Dropout:
        w.node("Identity", id, {x}, id);  // inference: no dropout
        break;
      case LayerType::Flatten:
        Writer::integer(w.node("Flatten", id, {x}, id), "axis", 1);
        break;
      case LayerType::Linear: {
        std::string in = x;
        const Shape order = orders.columns_of(i, a);
        if (!orders
                 .flat[static_cast<size_t>(src)]) {  // a Linear reading an image flattens it first
          Writer::integer(w.node("Flatten", id + "/flatten", {x}, id + "/flatten"), "axis", 1);
          in = id + "/flatten";
        }
        const Shape s = na.inputs[0];
        const int64_t features = s.h * s.w * s.c, out = p.out_channels;
        std::vector<float> matrix = weights.get(id + ".weight", out * features);
        // Our flatten order is HWC, ONNX's CHW: the same only without extent.
        if (orders_differ(order)) matrix = columns_to_chw(matrix, out, order);
        w.initializer(id + ".weight", {out, features}, matrix);
        std::vector<std::string> ins{in, id + ".weight"};
        if (p.bias) {
          w.initializer(id + ".bias", {out}, weights.get(id + ".bias", out));
          ins.push_back(id + ".bias");
        }
        Writer::integer(w.node("Gemm", id, ins, id), "transB", 1);
        break;
      }
      case LayerType::Add: {
        std::vector<std::string> ins;
        for (int port = 0; port < layer_input_ports(n); ++port) ins.push_back(operand(port));
        w.node("Add", id, ins, id);
        break;
      }
      case LayerType::Concat: {
        std::vector<std::string> ins;
        for (int port = 0; port < layer_input_ports(n); ++port) ins.push_back(operand(port));
        Writer::integer(w.node("Concat", id, ins, id), "axis", 1);  // channels, or features
        break;
      }
      case LayerType::LayerNorm: {
        // As PyTorch writes it at opset 13, over the channels (the last axis
        // of tokens, axis 1 of an NCHW image or of a [N, features] matrix):
        // (x - mean) / sqrt(mean((x - mean)^2) + eps) * scale + shift.
        const int64_t c = na.inputs[0].c;
        const bool flat = orders.flat[static_cast<size_t>(src)] && !on_tokens;
        const std::vector<int64_t> dims =
            flat || on_tokens ? std::vector<int64_t>{c} : std::vector<int64_t>{c, 1, 1};
        const Shape order = orders.columns_of(i, a);
        const int64_t axis = on_tokens ? -1 : 1;
        for (const char* part : {".weight", ".bias"})
          w.initializer(id + part, dims, feature_order(weights.get(id + part, c), flat, order));
        Writer::ints(w.node("ReduceMean", id + "/mean", {x}, id + "/mean"), "axes", {axis});
        w.node("Sub", id + "/centred", {x, id + "/mean"}, id + "/centred");
        w.node("Pow", id + "/squared", {id + "/centred", w.scalar(id + "/two", 2.0f)},
               id + "/squared");
        Writer::ints(w.node("ReduceMean", id + "/variance", {id + "/squared"}, id + "/variance"),
                     "axes", {axis});
        w.node("Add", id + "/plus_eps",
               {id + "/variance", w.scalar(id + "/eps", static_cast<float>(p.eps))},
               id + "/plus_eps");
        w.node("Sqrt", id + "/std", {id + "/plus_eps"}, id + "/std");
        w.node("Div", id + "/normalised", {id + "/centred", id + "/std"}, id + "/normalised");
        w.node("Mul", id + "/scaled", {id + "/normalised", id + ".weight"}, id + "/scaled");
        w.node("Add", id, {id + "/scaled", id + ".bias"}, id);
        break;
      }
      case LayerType::SelfAttention: {
        // Tokens [N, T, 3C] -> [N, T, 3*heads, d] -> [N, 3*heads, T, d] -> queries, keys and
        // values [N, heads, T, d]; softmax(q k^T / sqrt d) v -> [N, T, heads, d] -> [N, T, C]
        // with head h on channels h*d .. (h+1)*d - 1, as our layout.
        const int64_t c = na.inputs[0].c / 3, heads = p.heads, d = c / heads;
        const auto t = [&](const char* part) { return id + "/" + part; };
        w.node("Reshape", t("split_heads"), {x, w.integers(t("heads_shape"), {0, 0, 3 * heads, d})},
               t("split_heads"));
        Writer::ints(w.node("Transpose", t("heads"), {t("split_heads")}, t("heads")), "perm",
                     {0, 2, 1, 3});
        onnx::NodeProto& split =
            w.node("Split", t("qkv"),
                   {t("heads"), w.integers(t("qkv_sizes"), {heads, heads, heads})}, t("q"));
        split.add_output(t("k"));
        split.add_output(t("v"));
        Writer::integer(split, "axis", 1);
        Writer::ints(w.node("Transpose", t("k_t"), {t("k")}, t("k_t")), "perm", {0, 1, 3, 2});
        w.node("MatMul", t("scores"), {t("q"), t("k_t")}, t("scores"));
        w.node("Mul", t("scaled"),
               {t("scores"),
                w.scalar(t("scale"), static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))))},
               t("scaled"));
        Writer::integer(w.node("Softmax", t("probabilities"), {t("scaled")}, t("probabilities")),
                        "axis", -1);
        w.node("MatMul", t("mixed"), {t("probabilities"), t("v")}, t("mixed"));
        Writer::ints(w.node("Transpose", t("token_heads"), {t("mixed")}, t("token_heads")), "perm",
                     {0, 2, 1, 3});
        w.node("Reshape", id, {t("token_heads"), w.integers(t("out_shape"), {0, 0, c})}, id);
        break;
      }
      case LayerType::PositionEmbedding: {
        // [1, T, C], the tokens in our row order.
        const Shape s = na.inputs[0];
        w.initializer(id + ".weight", {1, s.h * s.w, s.c},
                      weights.get(id + ".weight", s.h * s.w * s.c));
        w.node("Add", id, {x, id + ".weight"}, id);
        break;
      }
      case LayerType::ClassToken: {
        // The stored [1, 1, C] expanded to [N, 1, C] (N from the tokens' shape) and put first.
        const Shape s = na.inputs[0];
        const auto t = [&](const char* part) { return id + "/" + part; };
        w.initializer(id + ".weight", {1, 1, s.c}, weights.get(id + ".weight", s.c));
        w.node("Shape", t("shape"), {x}, t("shape"));
        w.node("Slice", t("batch"),
               {t("shape"), w.integers(t("batch_from"), {0}), w.integers(t("batch_to"), {1})},
               t("batch"));
        Writer::integer(
            w.node("Concat", t("token_shape"), {t("batch"), w.integers(t("token_dims"), {1, s.c})},
                   t("token_shape")),
            "axis", 0);
        w.node("Expand", t("token"), {id + ".weight", t("token_shape")}, t("token"));
        Writer::integer(w.node("Concat", id, {t("token"), x}, id), "axis", 1);
        break;
      }
      case LayerType::TokenPool: {
        // [N, C]: the first token's features (Gather, as torchvision's ViT), or their mean.
        if (p.class_token) {
          Writer::integer(w.node("Gather", id, {x, w.integer_scalar(id + "/first", 0)}, id), "axis",
                          1);
        } else {
          onnx::NodeProto& mean = w.node("ReduceMean", id, {x}, id);
          Writer::ints(mean, "axes", {1});
          Writer::integer(mean, "keepdims", 0);
        }
        break;
      }
      case LayerType::SoftmaxCrossEntropy:
        logits_node = src;
        break;
      case LayerType::MultiHeadSelfAttention:
        throw std::logic_error("a composite layer reached the ONNX export unexpanded");
    }
  }
  if (logits_node < 0) throw UsageError(project.name + ": the model has no loss to export from");
  const int64_t classes = a.nodes[static_cast<size_t>(logits_node)].output.c;
  const std::string output = options.softmax ? "probabilities" : "logits";
  const std::string logits = value[static_cast<size_t>(logits_node)];
  const bool flat_logits = orders.flat[static_cast<size_t>(logits_node)];
  if (!flat_logits) {
    Writer::integer(w.node("Flatten", "logits/flatten", {logits}, "logits/flatten"), "axis", 1);
  }
  const std::string last = flat_logits ? logits : "logits/flatten";
  if (options.softmax)
    Writer::integer(w.node("Softmax", "softmax", {last}, output), "axis", 1);
  else
    w.node("Identity", "logits", {last}, output);
  value_info(graph.add_output(), output, {"N"}, {classes});

  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("Renaissance Workbench");
  model.set_producer_version(TR_VERSION);
  model.set_model_version(checkpoint.position.step);
  model.set_doc_string(project.description);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  auto meta = [&](const std::string& key, const std::string& v) {
    onnx::StringStringEntryProto* e = model.add_metadata_props();
    e->set_key(key);
    e->set_value(v);
  };
  auto list = [](const std::vector<double>& v) {
    std::string s;
    for (double d : v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", d);
      s += (s.empty() ? "" : ",") + std::string(buf);
    }
    return s;
  };
  namespace key = onnx_metadata;
  meta(key::kProject, project.name);
  meta(key::kInput, "NCHW float, normalised: (pixel / 255 - mean) / std per channel");
  meta(key::kMean, list(project.dataset.mean));
  meta(key::kStd, list(project.dataset.std));
  meta(key::kStep, std::to_string(checkpoint.position.step));
  meta(key::kWeights, weights.used_ema() ? "ema" : "master");
  meta(key::kDataset, dataset_kind_info(project.dataset.kind).name);
  const std::vector<std::string> names = class_names(project.dataset, options, classes);
  if (!names.empty()) meta(key::kClassNames, nlohmann::json(names).dump());
  *model.mutable_graph() = std::move(graph);

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError(path + ": cannot be written (the folder is missing or read-only)");
    if (!model.SerializeToOstream(&out) || !out.flush())
      throw UsageError(path + ": writing failed (the disk may be full)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw UsageError(path + ": cannot be written (" + ec.message() + ")");
  }
  OnnxExportSummary s;
  s.nodes = model.graph().node_size();
  s.initializers = model.graph().initializer_size();
  s.parameters = w.parameters();
  s.used_ema = weights.used_ema();
  s.input = in_node.id;
  s.output = output;
  s.classes = classes;
  s.class_names = names;
  return s;
}

}  // namespace tr

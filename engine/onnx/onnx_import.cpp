// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX reader: walks the graph's nodes (ONNX keeps them in topological
// order), turning each into one of our layers, or folding it away (Identity,
// a trailing Softmax, an inference Dropout's mask), or matching the patterns
// other tools write for SiLU (x * Sigmoid(x)) and GELU (the erf form). The
// weights are re-laid out from NCHW to our NHWC once the model's shapes are
// known: kernels [O,I,KH,KW] -> [O,KH,KW,I], and the columns of a Linear
// that reads a flattened image from CHW to HWC. The checkpoint then takes
// each weight and BN statistic the compiled plan holds, under the plan's
// own region, name and shape.
#include <renaissance/onnx_import.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/project_io.h>
#include <renaissance/project_limits.h>
#include <renaissance/region.h>
#include <renaissance/shape_inference.h>
#include "compile/compiler.h"
#include "onnx/onnx_layout.h"
#include "onnx/onnx_metadata.h"

namespace tr {

namespace {

using Dims = std::vector<int64_t>;

const std::string kNoName;

constexpr OnnxOpSupport kOps[] = {
    {"Conv", "Conv2d (dilation 1, symmetric padding)"},
    {"BatchNormalization", "BatchNorm2d (inference form)"},
    {"Relu", "ReLU"},
    {"Tanh", "Tanh"},
    {"Sigmoid", "Sigmoid; x * Sigmoid(x): SiLU"},
    {"LeakyRelu", "LeakyReLU"},
    {"Clip", "ReLU6 (min 0, max 6)"},
    {"Div, Erf, Add, Mul", "GELU, in its erf form: x * 0.5 * (1 + erf(x / sqrt 2))"},
    {"MaxPool", "MaxPool2d (floor mode)"},
    {"AveragePool", "AvgPool2d (floor mode, padding counted)"},
    {"Pad", "the padding of the AveragePool after it (zeros, as PyTorch writes it)"},
    {"GlobalAveragePool", "GlobalAvgPool"},
    {"ReduceMean",
     "GlobalAvgPool (over height and width), TokenPool's mean (over the tokens: axis 1 of "
     "[N, T, C], not kept)"},
    {"ReduceMean, Sub, Pow, Add, Sqrt, Div, Mul",
     "LayerNorm over the channels, as PyTorch writes it at opsets 13 to 16: (x - mean) / "
     "sqrt(mean((x - mean)^2) + eps) * scale + shift"},
    {"Add",
     "Add (two tensors), the bias of the MatMul before it, or a PositionEmbedding (a "
     "stored [1, T, C] added to tokens)"},
    {"Concat", "Concat (channels or features)"},
    {"Flatten", "Flatten (axis 1)"},
    {"Reshape", "Flatten (to [N, features]); a [N, F] matrix as one token [N, 1, F]"},
    {"Gemm", "Linear"},
    {"MatMul", "Linear (by a weight matrix), TokenLinear on tokens [N, T, C]"},
    {"Reshape, Transpose",
     "the tokens of an image: [N, C, H, W] reshaped to [N, C, H*W] and transposed to "
     "[N, H*W, C], and back: tokens transposed 0, 2, 1 and reshaped to their image "
     "[N, C, H, W] (no layer: the workbench's positions are its tokens)"},
    {"ConstantOfShape, Equal, Where, Expand, Concat",
     "ClassToken: a stored [1, 1, C] token expanded over the batch and put before the tokens "
     "(axis 1), as PyTorch writes torchvision's ViT"},
    {"Shape, Slice, Concat, Expand, Concat",
     "ClassToken: a stored [1, 1, C] token expanded to [N, 1, C] (N sliced from the tokens' "
     "Shape) and put before the tokens, as the workbench's export writes it"},
    {"Reshape, Transpose, Split, MatMul, Mul, Softmax",
     "SelfAttention on tokens [N, T, 3C], as the workbench's export writes it: reshaped to "
     "[N, T, 3 * heads, d], transposed 0, 2, 1, 3, split into queries, keys and values, "
     "softmax(q k^T / sqrt d) v, transposed back and reshaped to [N, T, C]"},
    {"Transpose, MatMul, Add, Shape, Gather, Slice, Reshape, Softmax, Gemm",
     "TokenLinear, SelfAttention and TokenLinear: nn.MultiheadAttention's self-attention as "
     "PyTorch 1.13 writes it at opset 13 (queries, keys and values from one projection, "
     "scaled by 1 / sqrt(head size))"},
    {"Gather", "TokenPool: the first token (index 0 on axis 1)"},
    {"Dropout", "Dropout"},
    {"Identity", "nothing (left out)"},
    {"Softmax, LogSoftmax", "nothing, when last (the loss computes it)"},
    {"Constant", "the values it holds"},
};

// An initializer or a Constant node's output.
struct Tensor {
  Dims dims;
  std::vector<float> f;    // float and double tensors
  std::vector<int64_t> i;  // integer tensors
  bool is_float = false;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// What produces a value of the graph: one of our nodes, with its rank in
// ONNX terms (4: [N,C,H,W], 3: tokens [N,T,C] of our [N,H,W,C] with T =
// H*W in row order, 2: [N, features]).
struct Value {
  int node = -1;
  int rank = 4;
};

std::string dims_text(const Dims& d) {
  std::string s = "[";
  for (size_t k = 0; k < d.size(); ++k) s += (k ? ", " : "") + std::to_string(d[k]);
  return s + "]";
}

const char* type_name(int t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT16:
      return "float16";
    case T::BFLOAT16:
      return "bfloat16";
    case T::INT8:
      return "int8";
    case T::UINT8:
      return "uint8";
    case T::INT16:
      return "int16";
    case T::BOOL:
      return "bool";
    case T::STRING:
      return "string";
    default:
      return "another type of";
  }
}

template <typename T>
std::vector<T> raw_values(const std::string& raw, int64_t count, const std::string& what) {
  if (raw.size() != static_cast<size_t>(count) * sizeof(T))
    throw UsageError(what + " holds " + std::to_string(raw.size()) +
                     " bytes where its shape needs " +
                     std::to_string(static_cast<size_t>(count) * sizeof(T)));
  std::vector<T> v(static_cast<size_t>(count));
  std::memcpy(v.data(), raw.data(), raw.size());
  return v;
}

template <typename T, typename Field>
std::vector<T> field_values(const Field& field, int64_t count, const std::string& what) {
  if (field.size() != count)
    throw UsageError(what + " holds " + std::to_string(field.size()) + " values where its shape " +
                     "needs " + std::to_string(count));
  return std::vector<T>(field.begin(), field.end());
}

Tensor decode(const onnx::TensorProto& t, const std::string& what) {
  using T = onnx::TensorProto;
  if (t.data_location() == T::EXTERNAL)
    throw UsageError(what +
                     " keeps its values in a file of its own, which the importer does not "
                     "read; save the model with its weights inside it");
  Tensor out;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > (int64_t{1} << 34) / d))
      throw UsageError(what + " has the impossible shape " +
                       dims_text(Dims(t.dims().begin(), t.dims().end())));
    out.dims.push_back(d);
    count *= d;
  }
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case T::FLOAT:
      out.is_float = true;
      out.f = raw ? raw_values<float>(t.raw_data(), count, what)
                  : field_values<float>(t.float_data(), count, what);
      break;
    case T::DOUBLE: {
      const std::vector<double> d = raw ? raw_values<double>(t.raw_data(), count, what)
                                        : field_values<double>(t.double_data(), count, what);
      out.is_float = true;
      out.f.assign(d.begin(), d.end());
      break;
    }
    case T::INT64:
      out.i = raw ? raw_values<int64_t>(t.raw_data(), count, what)
                  : field_values<int64_t>(t.int64_data(), count, what);
      break;
    case T::INT32: {
      const std::vector<int32_t> d = raw ? raw_values<int32_t>(t.raw_data(), count, what)
                                         : field_values<int32_t>(t.int32_data(), count, what);
      out.i.assign(d.begin(), d.end());
      break;
    }
    default:
      throw UsageError(what + " holds " + type_name(t.data_type()) +
                       " values; the importer takes float32 (or float64) weights and integer "
                       "shapes");
  }
  return out;
}

bool is_valid_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

class Importer {
 public:
  Importer(std::string path, const onnx::ModelProto& model, const OnnxImportOptions& options)
      : path_(std::move(path)), model_(model), graph_(model.graph()), options_(options) {}

  OnnxImportResult run();

 private:
  // Messages
  std::string node_label(int k) const {
    const onnx::NodeProto& n = graph_.node(k);
    return "node " + (n.name().empty() ? "#" + std::to_string(k) : "'" + n.name() + "'") + " (" +
           n.op_type() + ")";
  }
  [[noreturn]] void fail(int k, const std::string& what) const {
    throw UsageError(path_ + ": " + node_label(k) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { throw UsageError(path_ + ": " + what); }

  // Attributes, each checked to be one the importer reads for the op.
  const onnx::AttributeProto* attr(int k, const char* name) const {
    for (const onnx::AttributeProto& a : graph_.node(k).attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  void known_attributes(int k, std::initializer_list<const char*> names) const {
    for (const onnx::AttributeProto& a : graph_.node(k).attribute())
      if (std::none_of(names.begin(), names.end(), [&](const char* n) { return a.name() == n; }))
        fail(k, "has the attribute '" + a.name() + "', which the importer does not read for " +
                    graph_.node(k).op_type() + "; re-export the model without it");
  }
  int64_t attr_int(int k, const char* name, int64_t fallback) const {
    const onnx::AttributeProto* a = attr(k, name);
    return a ? a->i() : fallback;
  }
  double attr_float(int k, const char* name, double fallback) const {
    const onnx::AttributeProto* a = attr(k, name);
    return a ? shortest(a->f()) : fallback;
  }
  // The shortest decimal that is the same float: a file's 0.2f is 0.2 in
  // the project, not 0.20000000298.
  static double shortest(double v) {
    char buf[32];
    for (int digits = 6; digits < 10; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
      if (static_cast<float>(std::strtod(buf, nullptr)) == static_cast<float>(v)) break;
    }
    return std::strtod(buf, nullptr);
  }
  Dims attr_ints(int k, const char* name, Dims fallback) const {
    const onnx::AttributeProto* a = attr(k, name);
    return a ? Dims(a->ints().begin(), a->ints().end()) : fallback;
  }

  // Inputs
  int inputs(int k) const { return graph_.node(k).input_size(); }
  // Out of range gives "" (an absent input in ONNX's terms): the pattern matchers look at
  // neighbours' inputs and outputs before those nodes are checked, and protobuf's Get does
  // not check its index.
  const std::string& input(int k, int i) const {
    const onnx::NodeProto& n = graph_.node(k);
    return i >= 0 && i < n.input_size() ? n.input(i) : kNoName;
  }
  bool has_input(int k, int i) const { return !input(k, i).empty(); }
  const Tensor* constant(const std::string& name) const {
    auto it = constants_.find(name);
    return it == constants_.end() ? nullptr : it->second;
  }
  const Tensor& weight(int k, int i, const char* role) const {
    if (!has_input(k, i)) fail(k, std::string("has no ") + role);
    const Tensor* t = constant(input(k, i));
    if (!t)
      fail(k, std::string("takes its ") + role + " '" + input(k, i) +
                  "' from another node; the importer takes weights stored in the file");
    if (!t->is_float) fail(k, std::string("its ") + role + " '" + input(k, i) + "' is not float");
    return *t;
  }
  const Value& value(int k, int i) const {
    if (!has_input(k, i)) fail(k, "lacks its input " + std::to_string(i));
    auto it = values_.find(input(k, i));
    if (it == values_.end()) {
      if (constant(input(k, i)))
        fail(k, "computes with the stored tensor '" + input(k, i) +
                    "' where the importer takes the output of a layer");
      fail(k, "reads '" + input(k, i) + "', which no earlier node writes");
    }
    return it->second;
  }
  int consumers(const std::string& v) const {
    auto it = consumers_.find(v);
    return it == consumers_.end() ? 0 : static_cast<int>(it->second.size());
  }
  int sole_consumer(const std::string& v) const {
    if (outputs_.count(v) || consumers(v) != 1) return -1;
    return consumers_.at(v).front();
  }
  // The one input of node k other than `v` (a two-input node), or "".
  std::string other_input(int k, const std::string& v) const {
    if (inputs(k) != 2) return "";
    if (input(k, 0) == v) return input(k, 1);
    if (input(k, 1) == v) return input(k, 0);
    return "";
  }
  bool is_scalar(const std::string& name, double x) const {
    const Tensor* t = constant(name);
    return t && t->is_float && t->f.size() == 1 && std::abs(t->f[0] - x) <= 1e-6 * std::abs(x);
  }
  bool op_is(int k, const char* op) const { return k >= 0 && graph_.node(k).op_type() == op; }

  // Our graph
  std::string unique_id(const std::string& preferred, std::string_view base) {
    std::string id;
    for (char c : preferred)
      if (id.size() < limits::kMaxNodeIdLength - 4) id += is_valid_id_char(c) ? c : '_';
    if (!id.empty() && !taken_.count(id)) return taken_.insert(id), id;
    if (!id.empty())
      for (int n = 2;; ++n)
        if (!taken_.count(id + "_" + std::to_string(n)))
          return taken_.insert(id + "_" + std::to_string(n)), id + "_" + std::to_string(n);
    // "relu6" numbers as "relu6_1", not "relu61".
    const std::string stem =
        std::string(base) +
        (!base.empty() && std::isdigit(static_cast<unsigned char>(base.back())) ? "_" : "");
    int& next = counters_[stem];
    while (taken_.count(stem + std::to_string(++next))) {
    }
    id = stem + std::to_string(next);
    taken_.insert(id);
    return id;
  }
  // The id for node k's layer: its weight's name less ".weight" (the module
  // name PyTorch gives it), else the type's id base and a number.
  std::string layer_id(int k, LayerType t) {
    std::string preferred;
    if (inputs(k) > 1) {
      const std::string& w = input(k, 1);
      if (w.size() > 7 && w.ends_with(".weight") && constant(w))
        preferred = w.substr(0, w.size() - 7);
    }
    return unique_id(preferred, layer_spec(t).id_base);
  }
  // The values the project loader takes for each parameter of the layer
  // (layer_spec.h), checked as each layer is made: the project must save
  // and load again, and shape inference must never compute with sizes far
  // beyond any model's. `who` prefixes the message (the input), or k names
  // the node.
  void check_params(int k, const LayerNode& n, const std::string& who = "") const {
    const LayerSpec& spec = layer_spec(n.type);
    const auto bad = [&](const ParamSpec& ps, const std::string& value,
                         const std::string& allowed) {
      const std::string what = "has the " + std::string(ps.key) + " " + value + "; the " +
                               std::string(spec.name) + " layer takes " + allowed;
      if (k < 0) fail(who + " " + what);
      fail(k, what);
    };
    for (const ParamSpec& ps : spec.params) {
      if (ps.kind == LayerParamKind::Int || ps.kind == LayerParamKind::Window) {
        const int64_t h = n.params.*ps.int_field;
        const int64_t w = ps.int_field_w ? n.params.*ps.int_field_w : h;
        if (h < ps.min || h > ps.max || w < ps.min || w > ps.max)
          bad(ps, ps.int_field_w ? std::to_string(h) + "x" + std::to_string(w) : std::to_string(h),
              std::to_string(ps.min) + " to " + std::to_string(ps.max) +
                  (ps.int_field_w ? " in each direction" : ""));
      } else if (ps.kind == LayerParamKind::Number) {
        const double v = n.params.*ps.number_field;
        if (!(ps.lo_open ? v > ps.lo : v >= ps.lo) || !(ps.hi_open ? v < ps.hi : v <= ps.hi)) {
          char value[32], range[80];
          std::snprintf(value, sizeof value, "%g", v);
          std::snprintf(range, sizeof range, "%s%g, %g%s", ps.lo_open ? "(" : "[", ps.lo, ps.hi,
                        ps.hi_open ? ")" : "]");
          bad(ps, value, std::string("values in ") + range);
        }
      }
    }
  }
  // Our layer for node k, reading `from`, its output the value `out`; its id
  // from k's weight name (layer_id), or `preferred` when given ("" numbers it).
  int add_layer(int k, LayerType t, const LayerParams& p, const std::vector<Value>& from,
                const std::string& out, int rank, const std::string* preferred = nullptr) {
    LayerNode n;
    n.type = t;
    n.params = p;
    check_params(k, n);
    n.id = preferred ? unique_id(*preferred, layer_spec(t).id_base) : layer_id(k, t);
    project_.model.nodes.push_back(n);
    const int index = static_cast<int>(project_.model.nodes.size()) - 1;
    for (size_t port = 0; port < from.size(); ++port)
      project_.model.edges.push_back({from[port].node, 0, index, static_cast<int>(port)});
    values_[out] = {index, rank};
    onnx_of_.push_back(k);
    return index;
  }
  const std::string& out(int k) const {
    const onnx::NodeProto& n = graph_.node(k);
    return n.output_size() > 0 ? n.output(0) : kNoName;
  }
  void alias(int k, const Value& v) { values_[out(k)] = v; }
  void only_first_output(int k) const {
    for (int o = 1; o < graph_.node(k).output_size(); ++o)
      if (!graph_.node(k).output(o).empty() &&
          (consumers(graph_.node(k).output(o)) || outputs_.count(graph_.node(k).output(o))))
        fail(k, "its output '" + graph_.node(k).output(o) +
                    "' is used; the importer takes this operator's first output only");
  }
  // The symmetric padding of a [top, left, bottom, right] list.
  void padding(int k, LayerParams& p) const {
    const std::string pad = attr(k, "auto_pad") ? attr(k, "auto_pad")->s() : "NOTSET";
    if (pad != "NOTSET" && pad != "VALID")
      fail(k, "pads automatically (" + pad + "); re-export it with explicit pads");
    const Dims pads = attr_ints(k, "pads", {0, 0, 0, 0});
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
      fail(k, "pads " + dims_text(pads) +
                  ": the workbench's layers pad the same before and after in each direction");
    p.pad_h = pads[0];
    p.pad_w = pads[1];
  }
  void window(int k, LayerParams& p, const Dims& kernel) const {
    if (kernel.size() != 2) fail(k, "has the kernel " + dims_text(kernel) + "; expected two sizes");
    p.kernel_h = kernel[0];
    p.kernel_w = kernel[1];
    const Dims strides = attr_ints(k, "strides", {1, 1});
    if (strides.size() != 2) fail(k, "has the strides " + dims_text(strides));
    p.stride_h = strides[0];
    p.stride_w = strides[1];
    const Dims dilations = attr_ints(k, "dilations", {1, 1});
    if (dilations != Dims{1, 1})
      fail(k, "dilates by " + dims_text(dilations) + "; the workbench's layers have dilation 1");
    padding(k, p);
  }
  void image_input(int k, const Value& v) const {
    if (v.rank != 4) fail(k, "reads a [N, features] matrix where it needs an image");
  }

  // What the engine found wrong with the graph as a project, each problem at
  // the ONNX node it came from (with the field, where `fields`).
  [[noreturn]] void refuse(const std::vector<Diagnostic>& problems, const std::string& head,
                           bool fields) const {
    std::string text = head;
    for (const Diagnostic& d : problems) {
      const int node = project_.model.find(d.node_id);
      const int from = node >= 0 ? onnx_of_[static_cast<size_t>(node)] : -1;
      text += "\n  " +
              (from >= 0        ? node_label(from)
               : d.node.empty() ? "the graph"
                                : d.node) +
              ": " + (fields && !d.field.empty() ? "field '" + d.field + "': " : "") + d.message;
    }
    fail(text);
  }

  void read_constants();
  void read_input();
  void convert(int k);
  bool fused_silu(int k);
  bool fused_gelu(int k);
  bool reduces_channels(int k, int rank) const;
  bool fused_layer_norm(int k);
  bool folded_constant(int k);
  bool image_tokens(int k, const Dims& target);
  bool tokens_image(int k);
  bool batch_expand(int k);
  bool class_token(int k);
  bool position_embedding(int k, const Tensor& table, const Value& in);
  bool fused_attention(int k);
  bool token_attention(int k, const Dims& target);
  // The Softmax after node `after`, over the keys (axis -1, or `last_axis`,
  // the same axis counted from the front); refuse(node, what) otherwise.
  template <class Refuse>
  int keys_softmax(int after, int64_t last_axis, Refuse refuse) const {
    const int softmax = sole_consumer(out(after));
    if (!op_is(softmax, "Softmax")) refuse(after, "is not followed by a Softmax");
    const int64_t axis = attr_int(softmax, "axis", -1);
    if (axis != -1 && axis != last_axis)
      refuse(softmax, "normalises over axis " + std::to_string(axis) +
                          "; attention's softmax is over the keys (the last axis, -1)");
    return softmax;
  }
  void token_pool(int k);
  void conv(int k);
  void batch_norm(int k);
  void pool(int k, LayerType t);
  void pad(int k);
  void linear(int k, const Tensor& matrix, bool transposed, const Tensor* bias, const Value& in);
  void gemm(int k);
  void flatten(int k, const Value& v);
  void finish_output();
  void check_and_relayout(const ModelAnalysis& a);
  void fold_attention_parts(const ModelAnalysis& a);
  DatasetSpec dataset(std::vector<std::string>& notes) const;
  Checkpoint checkpoint() const;

  std::string path_;
  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  const OnnxImportOptions& options_;
  int64_t opset_ = 0;
  std::deque<Tensor> owned_;
  std::map<std::string, const Tensor*> constants_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<std::string> outputs_;
  std::vector<bool> done_;
  Project project_;
  std::set<std::string> taken_{"input", "loss"};
  std::map<std::string, int> counters_;
  // AveragePool nodes whose zero padding a Pad before them holds: [h, w].
  std::map<int, std::pair<int64_t, int64_t>> pad_before_;
  std::vector<int> onnx_of_;  // per our node, the ONNX node it came from (-1: none)
  std::map<std::string, std::vector<float>> weights_;  // by checkpoint name, our layout
  // Checks and re-layouts that need the model's shapes.
  std::vector<std::function<void(const ModelAnalysis&)>> after_analysis_;
  FeatureOrders orders_;  // of the analysed model, for the checks above
  std::vector<std::string> notes_;
  int64_t parameters_ = 0;
  Shape input_{};
  int64_t export_batch_ = -1;            // the input's batch in the file, -1 when not fixed
  std::map<std::string, int> producer_;  // the node writing each value
  int64_t classes_ = 0;
};

void Importer::read_constants() {
  for (const onnx::TensorProto& t : graph_.initializer()) {
    owned_.push_back(decode(t, path_ + ": the stored tensor '" + t.name() + "'"));
    constants_[t.name()] = &owned_.back();
  }
  if (graph_.sparse_initializer_size() > 0)
    fail("it stores sparse tensors, which the importer does not read");
}

void Importer::read_input() {
  std::vector<const onnx::ValueInfoProto*> real;
  for (const onnx::ValueInfoProto& v : graph_.input())
    if (!constants_.count(v.name())) real.push_back(&v);
  if (real.size() != 1) {
    std::string names;
    for (const onnx::ValueInfoProto* v : real)
      names += (names.empty() ? "'" : ", '") + v->name() + "'";
    fail("the model takes " + std::to_string(real.size()) + " inputs" +
         (names.empty() ? "" : " (" + names + ")") + "; the workbench's models take one image");
  }
  const onnx::ValueInfoProto& v = *real.front();
  const std::string what = "its input '" + v.name() + "'";
  if (!v.type().has_tensor_type() || v.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT)
    fail(what + " is not a float tensor");
  const onnx::TensorShapeProto& s = v.type().tensor_type().shape();
  Dims dims;
  for (const onnx::TensorShapeProto_Dimension& d : s.dim())
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  if (dims.size() != 4 || dims[1] <= 0 || dims[2] <= 0 || dims[3] <= 0) {
    std::string text = "[";
    for (int i = 0; i < s.dim_size(); ++i)
      text += (i ? ", " : "") + (s.dim(i).has_dim_value() ? std::to_string(s.dim(i).dim_value())
                                 : s.dim(i).dim_param().empty() ? "?"
                                                                : s.dim(i).dim_param());
    fail(what + " has the shape " + text + "]; expected an image [N, C, H, W] of fixed C, H and W");
  }
  input_ = Shape{1, dims[2], dims[3], dims[1]};
  export_batch_ = dims[0];
  LayerNode in;
  in.id = "input";
  in.type = LayerType::Input;
  in.params.height = dims[2];
  in.params.width = dims[3];
  in.params.channels = dims[1];
  check_params(-1, in, what);
  project_.model.nodes.push_back(in);
  onnx_of_.push_back(-1);
  values_[v.name()] = {0, 4};
}

bool Importer::fused_silu(int k) {
  const std::string& x = input(k, 0);
  const int m = sole_consumer(out(k));
  if (!op_is(m, "Mul") || other_input(m, out(k)) != x || done_[static_cast<size_t>(m)])
    return false;
  const Value v = value(k, 0);
  add_layer(k, LayerType::SiLU, layer_spec(LayerType::SiLU).defaults, {v}, out(m), v.rank);
  done_[static_cast<size_t>(m)] = true;
  return true;
}

// x / sqrt2 -> Erf -> + 1 -> x * . -> * 0.5, as PyTorch and our export write GELU.
bool Importer::fused_gelu(int k) {
  const std::string& x = input(k, 0);
  if (inputs(k) != 2 || !is_scalar(input(k, 1), std::sqrt(2.0))) return false;
  const int e = sole_consumer(out(k));
  if (!op_is(e, "Erf")) return false;
  const int a = sole_consumer(out(e));
  if (!op_is(a, "Add") || !is_scalar(other_input(a, out(e)), 1.0)) return false;
  const int m1 = sole_consumer(out(a));
  if (!op_is(m1, "Mul") || other_input(m1, out(a)) != x) return false;
  const int m2 = sole_consumer(out(m1));
  if (!op_is(m2, "Mul") || !is_scalar(other_input(m2, out(m1)), 0.5)) return false;
  const Value v = value(k, 0);
  add_layer(k, LayerType::GELU, layer_spec(LayerType::GELU).defaults, {v}, out(m2), v.rank);
  for (int j : {e, a, m1, m2}) done_[static_cast<size_t>(j)] = true;
  return true;
}

// Whether ReduceMean k averages over the channels alone (axis 1; the last
// axis of tokens), keeping them.
bool Importer::reduces_channels(int k, int rank) const {
  if (!op_is(k, "ReduceMean") || attr_int(k, "keepdims", 1) != 1) return false;
  Dims axes = attr_ints(k, "axes", {});
  if (has_input(k, 1)) {
    const Tensor* t = constant(input(k, 1));
    if (!t || t->is_float) return false;
    axes = t->i;
  }
  for (int64_t& ax : axes) ax = ax < 0 ? ax + rank : ax;
  return axes == Dims{rank == 3 ? 2 : 1};
}

// ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div ->
// Mul scale -> Add shift over the channels: LayerNorm as PyTorch writes it
// below opset 17, and as our export does.
bool Importer::fused_layer_norm(int k) {
  if (!has_input(k, 0) || !values_.count(input(k, 0))) return false;
  const Value v = value(k, 0);
  const std::string& x = input(k, 0);
  if (!reduces_channels(k, v.rank)) return false;
  const int sub = sole_consumer(out(k));
  if (!op_is(sub, "Sub") || input(sub, 0) != x || input(sub, 1) != out(k)) return false;
  const std::string& centred = out(sub);
  if (consumers(centred) != 2 || outputs_.count(centred)) return false;
  int pow = -1, div = -1;
  for (int c : consumers_.at(centred)) {
    if (op_is(c, "Pow")) pow = c;
    if (op_is(c, "Div")) div = c;
  }
  if (pow < 0 || div < 0 || input(pow, 0) != centred || !is_scalar(input(pow, 1), 2.0) ||
      input(div, 0) != centred)
    return false;
  const int var = sole_consumer(out(pow));
  if (!reduces_channels(var, v.rank)) return false;
  const int add = sole_consumer(out(var));
  if (!op_is(add, "Add")) return false;
  const Tensor* eps = constant(other_input(add, out(var)));
  if (!eps || !eps->is_float || eps->f.size() != 1) return false;
  const int root = sole_consumer(out(add));
  if (!op_is(root, "Sqrt") || sole_consumer(out(root)) != div || input(div, 1) != out(root))
    return false;
  const int mul = sole_consumer(out(div));
  if (!op_is(mul, "Mul")) return false;
  const Tensor* scale = constant(other_input(mul, out(div)));
  const int shifted = sole_consumer(out(mul));
  if (!scale || !op_is(shifted, "Add")) return false;
  const Tensor* shift = constant(other_input(shifted, out(mul)));
  if (!shift) return false;
  // A layer norm from here on: what does not fit is said, not passed over.
  if (!scale->is_float || !shift->is_float || scale->count() != shift->count())
    fail(mul, "scales a layer normalisation by " + std::to_string(scale->count()) +
                  " values and shifts it by " + std::to_string(shift->count()) +
                  "; it needs one float of each per channel");
  if (!(eps->f[0] > 0))
    fail(add, "adds " + std::to_string(eps->f[0]) +
                  " to a layer normalisation's variance; the LayerNorm layer takes an eps above 0");
  LayerParams p = layer_spec(LayerType::LayerNorm).defaults;
  p.eps = shortest(eps->f[0]);
  const int node = add_layer(mul, LayerType::LayerNorm, p, {v}, out(shifted), v.rank);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  weights_[id + ".weight"] = scale->f;
  weights_[id + ".bias"] = shift->f;
  for (int j : {sub, pow, div, var, add, root, mul, shifted}) done_[static_cast<size_t>(j)] = true;
  after_analysis_.push_back([this, mul, node, id, c = scale->count()](const ModelAnalysis& a) {
    const int64_t channels = a.nodes[static_cast<size_t>(node)].inputs[0].c;
    if (channels != c)
      fail(mul, "scales " + std::to_string(c) + " channels of a layer normalisation whose input " +
                    "has " + std::to_string(channels));
    // A flattened image's features: ONNX's order is CHW, ours HWC.
    const int src = a.source_of(node, 0).node;
    const Shape order = orders_.columns_of(node, a);
    if (orders_.flat[static_cast<size_t>(src)] && orders_differ(order))
      for (const char* part : {".weight", ".bias"})
        weights_[id + part] = columns_from_chw(weights_[id + part], 1, order);
  });
  return true;
}

// Integer shape arithmetic on stored values (ConstantOfShape, Mul, Equal,
// Where, and Expand of a stored tensor), as PyTorch writes a batch-sized
// expand: evaluated here, so what reads it sees a stored tensor.
bool Importer::folded_constant(int k) {
  const std::string& op = graph_.node(k).op_type();
  if (op != "ConstantOfShape" && op != "Mul" && op != "Equal" && op != "Where" && op != "Expand")
    return false;
  std::vector<const Tensor*> in;
  for (int i = 0; i < inputs(k); ++i) {
    const Tensor* t = constant(input(k, i));
    if (!t) return false;
    in.push_back(t);
  }
  if (in.empty()) return false;
  Tensor t;
  if (op == "ConstantOfShape") {
    if (in[0]->is_float || in[0]->i.size() > 8) return false;
    for (int64_t d : in[0]->i)
      if (d < 0 || d > 64) return false;
    t.dims = in[0]->i;
    int64_t fill = 0;
    bool is_float = true;
    double f = 0;
    if (const onnx::AttributeProto* a = attr(k, "value")) {
      const Tensor v = decode(a->t(), path_ + ": " + node_label(k) + "'s value");
      is_float = v.is_float;
      if (v.is_float && !v.f.empty()) f = v.f[0];
      if (!v.is_float && !v.i.empty()) fill = v.i[0];
    }
    if (t.count() > 64) return false;
    t.is_float = is_float;
    if (is_float)
      t.f.assign(static_cast<size_t>(t.count()), static_cast<float>(f));
    else
      t.i.assign(static_cast<size_t>(t.count()), fill);
  } else if (op == "Expand") {
    // Expanding a stored tensor to a shape of ones and its own sizes is the
    // tensor itself (the batch of 1 the model was written at).
    if (in.size() != 2 || in[1]->is_float) return false;
    const Dims& shape = in[1]->i;
    const Dims& dims = in[0]->dims;
    if (shape.size() != dims.size())
      fail(k, "expands a stored " + dims_text(dims) + " to " + dims_text(shape) +
                  "; the importer takes an expand over a batch of 1 (export with a batch of 1)");
    for (size_t d = 0; d < dims.size(); ++d)
      if (shape[d] != 1 && shape[d] != dims[d] && shape[d] != -1)
        fail(k, "expands a stored " + dims_text(dims) + " to " + dims_text(shape) +
                    "; the importer takes an expand over a batch of 1 (export with a batch of 1)");
    constants_[out(k)] = in[0];
    return true;
  } else {
    // Mul, Equal, Where on integer vectors of one length (or a scalar).
    for (const Tensor* x : in)
      if (x->is_float || x->i.empty() || x->i.size() > 64) return false;
    size_t n = 1;
    for (const Tensor* x : in) n = std::max(n, x->i.size());
    for (const Tensor* x : in)
      if (x->i.size() != 1 && x->i.size() != n) return false;
    auto at = [](const Tensor* x, size_t j) { return x->i[x->i.size() == 1 ? 0 : j]; };
    if ((op == "Where" && in.size() != 3) || (op != "Where" && in.size() != 2)) return false;
    for (size_t j = 0; j < n; ++j) {
      int64_t product = 0;
      if (op == "Mul" && __builtin_mul_overflow(at(in[0], j), at(in[1], j), &product)) return false;
      if (op == "Mul") t.i.push_back(product);
      if (op == "Equal") t.i.push_back(at(in[0], j) == at(in[1], j) ? 1 : 0);
      if (op == "Where") t.i.push_back(at(in[0], j) ? at(in[1], j) : at(in[2], j));
    }
    t.dims = {static_cast<int64_t>(n)};
  }
  owned_.push_back(std::move(t));
  constants_[out(k)] = &owned_.back();
  return true;
}

// Reshape [N, C, H, W] to [N, C, H*W], then Transpose 0, 2, 1: an image's
// positions as tokens [N, H*W, C], which our NHWC layout already is.
bool Importer::image_tokens(int k, const Dims& target) {
  const Value x = value(k, 0);
  if (x.rank != 4) return false;
  const int t = sole_consumer(out(k));
  if (!op_is(t, "Transpose") || attr_ints(t, "perm", {}) != Dims{0, 2, 1}) return false;
  if (target[1] <= 0 || target[2] == 0)
    fail(k, "reshapes an image to " + dims_text(target) +
                "; tokens are [N, C, H*W] with C and H*W stated (or H*W as -1)");
  const int node = x.node;
  after_analysis_.push_back([this, k, node, target](const ModelAnalysis& a) {
    const Shape s = a.nodes[static_cast<size_t>(node)].output;
    if (s.c != target[1] || (target[2] > 0 && s.h * s.w != target[2]))
      fail(k, "reshapes an image of " + std::to_string(s.c) + " channels and " +
                  std::to_string(s.h * s.w) + " positions to " + dims_text(target));
  });
  values_[out(t)] = {node, 3};
  done_[static_cast<size_t>(t)] = true;
  return true;
}

// Transpose 0, 2, 1 of tokens [N, T, C], then Reshape to [N, C, H, W]:
// tokens as the image they already are in our layout, when H and W are the
// tokens' own (shape inference knows them).
bool Importer::tokens_image(int k) {
  if (attr_ints(k, "perm", {}) != Dims{0, 2, 1} || !values_.count(input(k, 0))) return false;
  const Value x = value(k, 0);
  if (x.rank != 3) return false;
  const int r = sole_consumer(out(k));
  const Tensor* to = op_is(r, "Reshape") ? constant(input(r, 1)) : nullptr;
  if (!to || to->is_float || to->i.size() != 4) return false;
  const int node = x.node;
  after_analysis_.push_back([this, r, node, target = to->i](const ModelAnalysis& a) {
    const Shape s = a.nodes[static_cast<size_t>(node)].output;
    if (target[1] != s.c || target[2] != s.h || target[3] != s.w)
      fail(r, "reshapes tokens of " + std::to_string(s.c) + " features to " + dims_text(target) +
                  "; the importer takes tokens back to their own image [N, " + std::to_string(s.c) +
                  ", " + std::to_string(s.h) + ", " + std::to_string(s.w) + "]");
  });
  values_[out(r)] = {node, 4};
  done_[static_cast<size_t>(r)] = true;
  return true;
}

// Shape of tokens -> Slice [0, 1) -> Concat with [1, C] -> Expand of a
// stored [1, 1, C]: a class token over the batch, as our export writes it.
// The Expand's output stands for the stored token, so the Concat after it
// is a ClassToken (class_token below).
bool Importer::batch_expand(int k) {
  const int slice = sole_consumer(out(k));
  if (!op_is(slice, "Slice")) return false;
  const Tensor* from = constant(input(slice, 1));
  const Tensor* to = constant(input(slice, 2));
  const Tensor* axes = has_input(slice, 3) ? constant(input(slice, 3)) : nullptr;
  if (!from || !to || from->is_float || to->is_float || from->i != Dims{0} || to->i != Dims{1} ||
      (has_input(slice, 3) && (!axes || axes->is_float || axes->i != Dims{0})) ||
      has_input(slice, 4))
    return false;
  const int cat = sole_consumer(out(slice));
  if (!op_is(cat, "Concat") || attr_int(cat, "axis", 0) != 0 || inputs(cat) != 2 ||
      input(cat, 0) != out(slice))
    return false;
  const Tensor* rest = constant(input(cat, 1));
  if (!rest || rest->is_float || rest->i.size() != 2 || rest->i[0] != 1) return false;
  const int expand = sole_consumer(out(cat));
  if (!op_is(expand, "Expand") || input(expand, 1) != out(cat)) return false;
  const Tensor* token = constant(input(expand, 0));
  if (!token || !token->is_float || token->dims != Dims{1, 1, rest->i[1]}) return false;
  constants_[out(expand)] = token;
  for (int j : {slice, cat, expand}) done_[static_cast<size_t>(j)] = true;
  return true;
}

// Concat on axis 1 of a stored [1, 1, C] token (expanded over the batch)
// and tokens: a ClassToken, the stored token its weight.
bool Importer::class_token(int k) {
  if (inputs(k) != 2) return false;
  const Tensor* token = constant(input(k, 0));
  auto it = values_.find(input(k, 1));
  if (!token || it == values_.end() || it->second.rank != 3) return false;
  const int64_t axis = attr_int(k, "axis", 1);
  if (axis != 1 && axis != -2)
    fail(k, "joins a stored tensor to tokens along axis " + std::to_string(axis) +
                "; a class token goes before the tokens (axis 1)");
  if (!token->is_float || token->dims.size() != 3 || token->dims[0] != 1 || token->dims[1] != 1)
    fail(k, "puts a stored " + dims_text(token->dims) +
                " before the tokens; a class token is one learned vector [1, 1, C]");
  // Named after the stored token (an Expand's output stands for it; PyTorch's
  // expand is folded away).
  std::string stored = input(k, 0);
  for (auto p = producer_.find(stored); p != producer_.end() && op_is(p->second, "Expand");
       p = producer_.find(stored))
    stored = input(p->second, 0);
  const std::string preferred =
      stored.ends_with(".weight") ? stored.substr(0, stored.size() - 7) : std::string();
  const int node = add_layer(k, LayerType::ClassToken, layer_spec(LayerType::ClassToken).defaults,
                             {it->second}, out(k), 3, &preferred);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  weights_[id + ".weight"] = token->f;
  after_analysis_.push_back([this, k, node, c = token->dims[2]](const ModelAnalysis& a) {
    const int64_t channels = a.nodes[static_cast<size_t>(node)].inputs[0].c;
    if (channels != c)
      fail(k, "puts a class token of " + std::to_string(c) + " features before tokens of " +
                  std::to_string(channels));
  });
  return true;
}

// A stored [1, T, C] added to tokens: a PositionEmbedding.
bool Importer::position_embedding(int k, const Tensor& table, const Value& in) {
  if (!table.is_float || table.dims.size() != 3 || table.dims[0] != 1) return false;
  const int node = add_layer(k, LayerType::PositionEmbedding,
                             layer_spec(LayerType::PositionEmbedding).defaults, {in}, out(k), 3);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  weights_[id + ".weight"] = table.f;
  after_analysis_.push_back([this, k, node, dims = table.dims](const ModelAnalysis& a) {
    const Shape s = a.nodes[static_cast<size_t>(node)].inputs[0];
    if (s.h * s.w != dims[1] || s.c != dims[2])
      fail(k, "adds a position embedding " + dims_text(dims) + " to " + std::to_string(s.h * s.w) +
                  " tokens of " + std::to_string(s.c) + " features; it needs [1, " +
                  std::to_string(s.h * s.w) + ", " + std::to_string(s.c) + "]");
  });
  return true;
}

// Gather of index 0 on axis 1 of tokens: the class token's features, a TokenPool.
void Importer::token_pool(int k) {
  known_attributes(k, {"axis"});
  const Value x = value(k, 0);
  const Tensor* index = constant(input(k, 1));
  if (x.rank != 3 || attr_int(k, "axis", 0) != 1 || !index || index->is_float ||
      index->i.size() != 1 || index->i[0] != 0 || !index->dims.empty())
    fail(k,
         "gathers other than the first token (index 0 on axis 1 of [N, T, C]); the "
         "workbench's TokenPool takes the first token or the mean");
  LayerParams p = layer_spec(LayerType::TokenPool).defaults;
  p.class_token = true;
  add_layer(k, LayerType::TokenPool, p, {x}, out(k), 2);
}

// nn.MultiheadAttention's self-attention as PyTorch 1.13 writes it at opset
// 13 (sequence first inside): Transpose 1,0,2 -> MatMul by W_in^T -> Add
// b_in -> three Slices of the last axis (bounds from Shape, Gather, Add, Div
// and Mul: thirds) -> each Reshape to [T, N*heads, d] and Transposed (the
// queries 1,0,2 then divided by sqrt(d), the keys 1,2,0, the values 1,0,2)
// -> MatMul -> Softmax over the keys -> MatMul by the values -> Transpose
// 1,0,2 -> Reshape [T*N, C] -> Gemm by W_out -> Reshape [T, N, C] ->
// Transpose 1,0,2. Becomes TokenLinear (3C), SelfAttention, TokenLinear (C).
bool Importer::fused_attention(int k) {
  if (attr_ints(k, "perm", {}) != Dims{1, 0, 2} || !values_.count(input(k, 0))) return false;
  const Value x = value(k, 0);
  if (x.rank != 3) return false;
  const int in_mm = sole_consumer(out(k));
  if (!op_is(in_mm, "MatMul") || input(in_mm, 0) != out(k) || !constant(input(in_mm, 1)))
    return false;
  const int in_add = sole_consumer(out(in_mm));
  if (!op_is(in_add, "Add") || !constant(other_input(in_add, out(in_mm)))) return false;
  // From here on it is attention: what does not fit is said.
  const auto not_attention = [&](int at, const std::string& what) {
    fail(at, what +
                 "; the importer takes self-attention as nn.MultiheadAttention writes it "
                 "(PyTorch 1.13, opset 13, exported with a fixed batch)");
  };
  const Tensor& w_in = weight(in_mm, 1, "projection matrix");
  const Tensor& b_in = *constant(other_input(in_add, out(in_mm)));
  if (w_in.dims.size() != 2 || w_in.dims[1] != 3 * w_in.dims[0] || !b_in.is_float ||
      b_in.count() != w_in.dims[1])
    not_attention(in_mm, "projects by " + dims_text(w_in.dims) + " with " +
                             std::to_string(b_in.count()) +
                             " biases, not to queries, keys and values [C, 3C] with 3C biases");
  const int64_t c = w_in.dims[0];
  std::vector<int> used{k, in_mm, in_add};
  // The three slices and the shape arithmetic of their bounds.
  int q = -1, kk = -1, v = -1, shape = -1;
  for (int u : consumers_.at(out(in_add))) {
    if (op_is(u, "Shape")) shape = u;
    if (!op_is(u, "Slice")) continue;
    const Tensor* start = constant(input(u, 1));
    if (start && !start->is_float && start->i == Dims{0}) q = u;
  }
  if (q < 0 || shape < 0 || consumers(out(in_add)) != 4)
    not_attention(in_add, "is not read by three Slices and the Shape of their bounds");
  for (int u : consumers_.at(out(in_add))) {
    if (op_is(u, "Slice") && input(u, 1) == input(q, 2)) kk = u;
  }
  if (kk < 0) not_attention(q, "is not followed by the keys' slice");
  for (int u : consumers_.at(out(in_add)))
    if (op_is(u, "Slice") && input(u, 1) == input(kk, 2)) v = u;
  if (v < 0) not_attention(kk, "is not followed by the values' slice");
  used.insert(used.end(), {q, kk, v, shape});
  // Shape -> Gather -> Add -> Div -> three Muls (the bounds): evaluated by the layers.
  const int gather = sole_consumer(out(shape));
  const int plus = op_is(gather, "Gather") ? sole_consumer(out(gather)) : -1;
  const int third = op_is(plus, "Add") ? sole_consumer(out(plus)) : -1;
  if (!op_is(third, "Div") || consumers(out(third)) != 3)
    not_attention(shape, "does not compute the slices' bounds (Gather, Add, Div, Mul)");
  used.insert(used.end(), {gather, plus, third});
  for (int u : consumers_.at(out(third))) {
    if (!op_is(u, "Mul")) not_attention(u, "is not one of the slices' bounds");
    used.push_back(u);
  }
  for (int s : {q, kk, v}) {
    const Tensor* axes = constant(input(s, 3));
    if (!axes || axes->is_float || axes->i.size() != 1 || (axes->i[0] != -1 && axes->i[0] != 2))
      not_attention(s, "does not slice the last axis");
  }
  // Each third reshaped to [T, N*heads, d] and transposed.
  int64_t heads = 0, d = 0, tokens = 0;
  auto head_view = [&](int s, const Dims& perm) {
    const int r = sole_consumer(out(s));
    const Tensor* to = op_is(r, "Reshape") ? constant(input(r, 1)) : nullptr;
    if (!to || to->is_float || to->i.size() != 3)
      not_attention(s, "is not reshaped to [T, N * heads, head size]");
    const int t = sole_consumer(out(r));
    if (!op_is(t, "Transpose") || attr_ints(t, "perm", {}) != perm)
      not_attention(r, "is not transposed " + dims_text(perm));
    if (export_batch_ <= 0 || to->i[1] % export_batch_ != 0)
      not_attention(r, "splits into " + std::to_string(to->i[1]) +
                           " heads over the batch, and the model's input has no fixed batch");
    const int64_t h = to->i[1] / export_batch_;
    if (heads == 0) {
      heads = h;
      d = to->i[2];
      tokens = to->i[0];
    }
    if (h != heads || to->i[2] != d || h * d != c)
      not_attention(r, "splits " + std::to_string(c) + " channels into " + std::to_string(h) +
                           " heads of " + std::to_string(to->i[2]));
    used.insert(used.end(), {r, t});
    return t;
  };
  const int tq = head_view(q, {1, 0, 2}), tk = head_view(kk, {1, 2, 0}),
            tv = head_view(v, {1, 0, 2});
  const int scale = sole_consumer(out(tq));
  if (!op_is(scale, "Div")) not_attention(tq, "is not divided by the square root of the head size");
  const double root = std::sqrt(static_cast<double>(d));
  if (!is_scalar(input(scale, 1), root)) {
    const Tensor* by = constant(input(scale, 1));
    char expected[32];
    std::snprintf(expected, sizeof expected, "%g", root);
    not_attention(scale,
                  std::string("divides the queries by ") +
                      (by && by->is_float && by->f.size() == 1 ? std::to_string(by->f[0])
                                                               : "'" + input(scale, 1) + "'") +
                      "; attention divides them by the square root of the head size (" + expected +
                      " for heads of " + std::to_string(d) + ")");
  }
  const int scores = sole_consumer(out(scale));
  if (!op_is(scores, "MatMul") || input(scores, 0) != out(scale) || input(scores, 1) != out(tk))
    not_attention(scale, "is not multiplied by the transposed keys");
  const int softmax = keys_softmax(scores, 2, not_attention);
  const int mixed = sole_consumer(out(softmax));
  if (!op_is(mixed, "MatMul") || input(mixed, 0) != out(softmax) || input(mixed, 1) != out(tv))
    not_attention(softmax, "is not multiplied by the values");
  const int back = sole_consumer(out(mixed));
  const int merged = op_is(back, "Transpose") && attr_ints(back, "perm", {}) == Dims{1, 0, 2}
                         ? sole_consumer(out(back))
                         : -1;
  if (!op_is(merged, "Reshape")) not_attention(mixed, "is not transposed 1, 0, 2 and reshaped");
  const int gemm = sole_consumer(out(merged));
  if (!op_is(gemm, "Gemm") || attr_int(gemm, "transA", 0) != 0 ||
      attr_int(gemm, "transB", 0) != 1 || attr_float(gemm, "alpha", 1.0) != 1.0 ||
      attr_float(gemm, "beta", 1.0) != 1.0 || !has_input(gemm, 2))
    not_attention(merged,
                  "is not projected by a Gemm with its weight [C, C] transposed and a bias");
  const Tensor& w_out = weight(gemm, 1, "output projection");
  const Tensor& b_out = weight(gemm, 2, "output projection's bias");
  if (w_out.dims != Dims{c, c} || b_out.count() != c)
    not_attention(gemm, "projects by " + dims_text(w_out.dims) + "; the output projection is [" +
                            std::to_string(c) + ", " + std::to_string(c) + "] with " +
                            std::to_string(c) + " biases");
  const int unmerged = sole_consumer(out(gemm));
  const int last = op_is(unmerged, "Reshape") ? sole_consumer(out(unmerged)) : -1;
  if (!op_is(last, "Transpose") || attr_ints(last, "perm", {}) != Dims{1, 0, 2})
    not_attention(gemm, "is not reshaped to [T, N, C] and transposed back 1, 0, 2");
  used.insert(used.end(), {scale, scores, softmax, mixed, back, merged, gemm, unmerged, last});

  // The module's name, from the output projection's weight ("...out_proj.weight").
  std::string module;
  const std::string& wname = input(gemm, 1);
  if (wname.ends_with(".out_proj.weight")) module = wname.substr(0, wname.size() - 16);
  LayerParams mha = layer_spec(LayerType::MultiHeadSelfAttention).defaults;
  mha.heads = heads;
  mha.bias = true;
  const int node = add_layer(softmax, LayerType::MultiHeadSelfAttention, mha, {x}, out(last), 3,
                             module.empty() ? nullptr : &module);
  // W_in^T is stored [C, 3C]: ours is [3C, C], as nn.MultiheadAttention's in_proj_weight.
  std::vector<float> w(static_cast<size_t>(3 * c * c));
  for (int64_t o = 0; o < 3 * c; ++o)
    for (int64_t i = 0; i < c; ++i)
      w[static_cast<size_t>(o * c + i)] = w_in.f[static_cast<size_t>(i * 3 * c + o)];
  const std::string& id = project_.model.nodes[static_cast<size_t>(node)].id;
  weights_[id + ".in_proj.weight"] = std::move(w);
  weights_[id + ".in_proj.bias"] = b_in.f;
  weights_[id + ".out_proj.weight"] = w_out.f;
  weights_[id + ".out_proj.bias"] = b_out.f;
  after_analysis_.push_back([this, k, node, c, tokens](const ModelAnalysis& a) {
    const Shape s = a.nodes[static_cast<size_t>(node)].inputs[0];
    if (s.c != c || s.h * s.w != tokens)
      fail(k, "attends over " + std::to_string(tokens) + " tokens of " + std::to_string(c) +
                  " features, and its input has " + std::to_string(s.h * s.w) + " of " +
                  std::to_string(s.c));
  });
  for (int j : used) done_[static_cast<size_t>(j)] = true;
  return true;
}

// SelfAttention on tokens [N, T, 3C] as our export writes it: Reshape
// [N, T, 3*heads, d] -> Transpose 0,2,1,3 -> Split in three on axis 1 ->
// the keys transposed 0,1,3,2 -> MatMul -> Mul by 1 / sqrt(d) -> Softmax
// over the keys -> MatMul by the values -> Transpose 0,2,1,3 -> Reshape
// [N, T, C].
bool Importer::token_attention(int k, const Dims& target) {
  const Value x = value(k, 0);
  if (x.rank != 3 || target[2] <= 0 || target[2] % 3 != 0 || target[3] <= 0) return false;
  const int heads_first = sole_consumer(out(k));
  if (!op_is(heads_first, "Transpose") || attr_ints(heads_first, "perm", {}) != Dims{0, 2, 1, 3})
    return false;
  const int split = sole_consumer(out(heads_first));
  if (!op_is(split, "Split")) return false;
  // From here on it is attention: what does not fit is said.
  const auto not_attention = [&](int at, const std::string& what) {
    fail(at, what +
                 "; the importer takes self-attention on tokens as the workbench's export "
                 "writes it, or as nn.MultiheadAttention does");
  };
  const int64_t heads = target[2] / 3, d = target[3];
  known_attributes(split, {"axis"});
  const Tensor* sizes = has_input(split, 1) ? constant(input(split, 1)) : nullptr;
  if (attr_int(split, "axis", 0) != 1 || graph_.node(split).output_size() != 3 ||
      (has_input(split, 1) && (!sizes || sizes->is_float || sizes->i != Dims{heads, heads, heads})))
    not_attention(split, "does not split the " + std::to_string(3 * heads) +
                             " heads into three of " + std::to_string(heads) +
                             " (queries, keys, values) on axis 1");
  const onnx::NodeProto& sp = graph_.node(split);
  const std::string &q = sp.output(0), &kk = sp.output(1), &v = sp.output(2);
  const int keys_t = sole_consumer(kk);
  if (!op_is(keys_t, "Transpose") || attr_ints(keys_t, "perm", {}) != Dims{0, 1, 3, 2})
    not_attention(split, "does not transpose the keys 0, 1, 3, 2");
  const int scores = sole_consumer(q);
  if (!op_is(scores, "MatMul") || input(scores, 0) != q || input(scores, 1) != out(keys_t))
    not_attention(split, "does not multiply the queries by the transposed keys");
  const int scaled = sole_consumer(out(scores));
  if (!op_is(scaled, "Mul")) not_attention(scores, "is not multiplied by 1 / sqrt(head size)");
  const double by = 1.0 / std::sqrt(static_cast<double>(d));
  if (!is_scalar(other_input(scaled, out(scores)), by)) {
    const Tensor* factor = constant(other_input(scaled, out(scores)));
    char text[96];
    if (factor && factor->is_float && factor->f.size() == 1)
      std::snprintf(text, sizeof text, "multiplies the scores by %g", factor->f[0]);
    else
      std::snprintf(text, sizeof text, "multiplies the scores by a computed value");
    char expected[32];
    std::snprintf(expected, sizeof expected, "%g", by);
    not_attention(scaled, std::string(text) +
                              "; attention multiplies them by 1 / sqrt(head size) (" + expected +
                              " for heads of " + std::to_string(d) + ")");
  }
  const int softmax = keys_softmax(scaled, 3, not_attention);
  const int mixed = sole_consumer(out(softmax));
  if (!op_is(mixed, "MatMul") || input(mixed, 0) != out(softmax) || input(mixed, 1) != v ||
      sole_consumer(v) != mixed)
    not_attention(softmax, "is not multiplied by the values");
  const int tokens_first = sole_consumer(out(mixed));
  if (!op_is(tokens_first, "Transpose") || attr_ints(tokens_first, "perm", {}) != Dims{0, 2, 1, 3})
    not_attention(mixed, "is not transposed back 0, 2, 1, 3");
  const int merged = sole_consumer(out(tokens_first));
  const Tensor* to = op_is(merged, "Reshape") ? constant(input(merged, 1)) : nullptr;
  if (!to || to->is_float || to->i.size() != 3 || to->i[2] != heads * d)
    not_attention(tokens_first, "is not reshaped to [N, T, " + std::to_string(heads * d) + "]");
  LayerParams p = layer_spec(LayerType::SelfAttention).defaults;
  p.heads = heads;
  add_layer(softmax, LayerType::SelfAttention, p, {x}, out(merged), 3);
  after_analysis_.push_back([this, k, node = x.node, heads, d](const ModelAnalysis& a) {
    const int64_t c = a.nodes[static_cast<size_t>(node)].output.c;
    if (c != 3 * heads * d)
      fail(k, "splits tokens of " + std::to_string(c) + " features into 3 x " +
                  std::to_string(heads) + " heads of " + std::to_string(d));
  });
  for (int j : {heads_first, split, keys_t, scores, scaled, softmax, mixed, tokens_first, merged})
    done_[static_cast<size_t>(j)] = true;
  return true;
}

void Importer::conv(int k) {
  known_attributes(k, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  const Value x = value(k, 0);
  image_input(k, x);
  const Tensor& w = weight(k, 1, "kernel");
  if (w.dims.size() != 4)
    fail(k, "has the kernel shape " + dims_text(w.dims) + "; expected [O, I, KH, KW]");
  LayerParams p;
  p.out_channels = w.dims[0];
  p.groups = attr_int(k, "group", 1);
  const Dims kernel = attr_ints(k, "kernel_shape", {w.dims[2], w.dims[3]});
  if (kernel != Dims{w.dims[2], w.dims[3]})
    fail(k, "says kernel_shape " + dims_text(kernel) + " but its kernel is " + dims_text(w.dims));
  window(k, p, kernel);
  const Tensor* b = has_input(k, 2) ? &weight(k, 2, "bias") : nullptr;
  if (b && b->count() != p.out_channels)
    fail(k, "has " + std::to_string(b->count()) + " biases for " + std::to_string(p.out_channels) +
                " output channels");
  p.bias = b != nullptr;
  const int node = add_layer(k, LayerType::Conv2d, p, {x}, out(k), 4);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  weights_[id + ".weight"] = kernel_from_oihw(w.f, w.dims[0], w.dims[2], w.dims[3], w.dims[1]);
  if (b) weights_[id + ".bias"] = b->f;
  after_analysis_.push_back(
      [this, k, node, w_in = w.dims[1], groups = p.groups](const ModelAnalysis& a) {
        const int64_t c = a.nodes[static_cast<size_t>(node)].inputs[0].c;
        if (w_in * groups != c)
          fail(k, "its kernel takes " + std::to_string(w_in * groups) + " input channels (" +
                      std::to_string(w_in) + " per group, " + std::to_string(groups) +
                      " groups) but its input has " + std::to_string(c));
      });
}

void Importer::batch_norm(int k) {
  known_attributes(k, {"epsilon", "momentum", "training_mode", "spatial"});
  if (attr_int(k, "training_mode", 0) != 0)
    fail(k, "is in training mode; export the model for inference (model.eval())");
  if (attr_int(k, "spatial", 1) != 1) fail(k, "normalises per position (spatial = 0)");
  only_first_output(k);
  const Value x = value(k, 0);
  const char* roles[] = {"scale", "shift", "running mean", "running variance"};
  const char* parts[] = {".weight", ".bias", ".running_mean", ".running_var"};
  const Tensor* t[4];
  for (int i = 0; i < 4; ++i) t[i] = &weight(k, i + 1, roles[i]);
  const int64_t c = t[0]->count();
  for (int i = 1; i < 4; ++i)
    if (t[i]->count() != c)
      fail(k, "has " + std::to_string(c) + " scales but " + std::to_string(t[i]->count()) + " " +
                  roles[i] + " values");
  LayerParams p = layer_spec(LayerType::BatchNorm2d).defaults;
  p.eps = attr_float(k, "epsilon", 1e-5);
  p.momentum = shortest(1.0 - attr_float(k, "momentum", 0.9));  // ONNX weighs the old estimate
  const int node = add_layer(k, LayerType::BatchNorm2d, p, {x}, out(k), x.rank);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  for (int i = 0; i < 4; ++i) weights_[id + parts[i]] = t[i]->f;
  after_analysis_.push_back([this, k, node, c](const ModelAnalysis& a) {
    if (a.nodes[static_cast<size_t>(node)].inputs[0].c != c)
      fail(k, "normalises " + std::to_string(c) + " channels but its input has " +
                  std::to_string(a.nodes[static_cast<size_t>(node)].inputs[0].c));
  });
}

void Importer::pool(int k, LayerType t) {
  const bool avg = t == LayerType::AvgPool2d;
  if (avg)
    known_attributes(
        k, {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  else
    known_attributes(k, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                         "storage_order", "strides"});
  only_first_output(k);
  const Value x = value(k, 0);
  image_input(k, x);
  if (attr_int(k, "ceil_mode", 0) != 0)
    fail(k, "rounds its output size up (ceil_mode); the workbench's pooling rounds down");
  LayerParams p = layer_spec(t).defaults;
  const Dims kernel = attr_ints(k, "kernel_shape", {});
  window(k, p, kernel);
  bool padding_counted = attr_int(k, "count_include_pad", 0) != 0;
  if (auto it = pad_before_.find(k); it != pad_before_.end()) {
    if (p.pad_h != 0 || p.pad_w != 0) fail(k, "pads again after the Pad before it");
    p.pad_h = it->second.first;
    p.pad_w = it->second.second;
    padding_counted = true;  // the Pad's zeros are averaged in
  }
  if (avg && (p.pad_h || p.pad_w) && !padding_counted)
    fail(k,
         "leaves the padding out of its averages (count_include_pad = 0); the workbench's "
         "average pooling counts it, as PyTorch's does by default");
  add_layer(k, t, p, {x}, out(k), 4);
}

// PyTorch writes an average pooling that counts its padding as a Pad of
// zeros and an unpadded AveragePool: one AvgPool2d here.
void Importer::pad(int k) {
  known_attributes(k, {"mode", "pads", "value"});
  const std::string mode = attr(k, "mode") ? attr(k, "mode")->s() : "constant";
  Dims pads = attr_ints(k, "pads", {});
  double fill = attr_float(k, "value", 0.0);
  if (has_input(k, 1)) {
    const Tensor* t = constant(input(k, 1));
    if (!t || t->is_float) fail(k, "takes its pads from another node");
    pads = t->i;
  }
  if (has_input(k, 2)) {
    const Tensor* t = constant(input(k, 2));
    if (!t || !t->is_float || t->f.size() != 1) fail(k, "takes its fill value from another node");
    fill = t->f[0];
  }
  const int pool = sole_consumer(out(k));
  const bool symmetric = pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 &&
                         pads[5] == 0 && pads[2] == pads[6] && pads[3] == pads[7];
  if (mode != "constant" || fill != 0 || !symmetric || !op_is(pool, "AveragePool"))
    fail(k, "pads by " + dims_text(pads) + " (" + mode + ", " + std::to_string(fill) +
                "); the importer takes a Pad only as the zero padding, the same on both sides, of "
                "the AveragePool after it");
  pad_before_[pool] = {pads[2], pads[3]};
  alias(k, value(k, 0));
}

void Importer::linear(int k, const Tensor& matrix, bool transposed, const Tensor* bias,
                      const Value& in) {
  if (in.rank == 4) fail(k, "multiplies an image; the importer takes [N, features] matrices here");
  const bool tokens = in.rank == 3;
  if (matrix.dims.size() != 2)
    fail(k, "has the weight shape " + dims_text(matrix.dims) + "; expected a matrix");
  const int64_t out_features = transposed ? matrix.dims[0] : matrix.dims[1];
  const int64_t in_features = transposed ? matrix.dims[1] : matrix.dims[0];
  std::vector<float> m = matrix.f;  // [out, in]
  if (!transposed)
    for (int64_t o = 0; o < out_features; ++o)
      for (int64_t i = 0; i < in_features; ++i)
        m[static_cast<size_t>(o * in_features + i)] =
            matrix.f[static_cast<size_t>(i * out_features + o)];
  if (bias && bias->count() != out_features)
    fail(k, "has " + std::to_string(bias->count()) + " biases for " + std::to_string(out_features) +
                " outputs");
  const LayerType type = tokens ? LayerType::TokenLinear : LayerType::Linear;
  LayerParams p = layer_spec(type).defaults;
  p.out_channels = out_features;
  p.bias = bias != nullptr;
  const int node = add_layer(k, type, p, {in}, out(k), in.rank);
  const std::string id = project_.model.nodes[static_cast<size_t>(node)].id;
  if (bias) weights_[id + ".bias"] = bias->f;
  if (tokens) {
    // Each token's features, in the same order on both sides: no re-layout.
    weights_[id + ".weight"] = std::move(m);
    after_analysis_.push_back([this, k, node, in_features](const ModelAnalysis& a) {
      const int64_t c = a.nodes[static_cast<size_t>(node)].inputs[0].c;
      if (c != in_features)
        fail(k, "takes " + std::to_string(in_features) + " features a token but its tokens have " +
                    std::to_string(c));
    });
    return;
  }
  // The columns are re-laid out once the shape they come from is known.
  weights_[id + ".weight"] = std::move(m);
  after_analysis_.push_back([this, k, node, id, in_features, out_features](const ModelAnalysis& a) {
    const Shape s = a.nodes[static_cast<size_t>(node)].inputs[0];
    if (s.per_sample() != in_features)
      fail(k, "takes " + std::to_string(in_features) + " features but its input has " +
                  std::to_string(s.per_sample()) + " (" + std::to_string(s.c) + " channels of " +
                  std::to_string(s.h) + "x" + std::to_string(s.w) + ")");
    const Shape order = orders_.columns_of(node, a);
    if (orders_differ(order))
      weights_[id + ".weight"] = columns_from_chw(weights_[id + ".weight"], out_features, order);
  });
}

void Importer::gemm(int k) {
  known_attributes(k, {"alpha", "beta", "transA", "transB"});
  if (attr_int(k, "transA", 0) != 0) fail(k, "transposes its input (transA = 1)");
  if (attr_float(k, "alpha", 1.0) != 1.0 || (has_input(k, 2) && attr_float(k, "beta", 1.0) != 1.0))
    fail(k, "scales its product or bias (alpha or beta other than 1)");
  const Value x = value(k, 0);
  const Tensor& b = weight(k, 1, "weight matrix");
  linear(k, b, attr_int(k, "transB", 0) != 0, has_input(k, 2) ? &weight(k, 2, "bias") : nullptr, x);
}

void Importer::flatten(int k, const Value& v) {
  if (v.rank == 2) return alias(k, v);
  // The model's input flattened: a Linear that reads an image input
  // flattens it itself (and no Flatten layer may come first), as the
  // exporter's "<linear>/flatten" says.
  if (v.node == 0) return alias(k, Value{0, 2});
  add_layer(k, LayerType::Flatten, layer_spec(LayerType::Flatten).defaults, {v}, out(k), 2);
}

void Importer::convert(int k) {
  const onnx::NodeProto& n = graph_.node(k);
  const std::string& op = n.op_type();
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    fail(k, "is an operator of the domain '" + n.domain() + "', which the importer does not know");
  if (n.output_size() < 1) fail(k, "has no output");
  if (folded_constant(k)) return;
  auto simple = [&](LayerType t, LayerParams p) {
    only_first_output(k);
    const Value x = value(k, 0);
    add_layer(k, t, p, {x}, out(k), x.rank);
  };
  const LayerParams none{};
  if (op == "Constant") {
    known_attributes(k, {"value", "value_float", "value_floats", "value_int", "value_ints"});
    Tensor t;
    if (const onnx::AttributeProto* a = attr(k, "value")) {
      t = decode(a->t(), path_ + ": " + node_label(k) + "'s value");
    } else if (const onnx::AttributeProto* f = attr(k, "value_float")) {
      t.is_float = true;
      t.f = {f->f()};
    } else if (const onnx::AttributeProto* fs = attr(k, "value_floats")) {
      t.is_float = true;
      t.f.assign(fs->floats().begin(), fs->floats().end());
      t.dims = {static_cast<int64_t>(t.f.size())};
    } else if (const onnx::AttributeProto* i = attr(k, "value_int")) {
      t.i = {i->i()};
    } else if (const onnx::AttributeProto* is = attr(k, "value_ints")) {
      t.i.assign(is->ints().begin(), is->ints().end());
      t.dims = {static_cast<int64_t>(t.i.size())};
    } else {
      fail(k, "holds no value");
    }
    owned_.push_back(std::move(t));
    constants_[out(k)] = &owned_.back();
  } else if (op == "Identity") {
    if (const Tensor* t = constant(input(k, 0)))
      constants_[out(k)] = t;
    else
      alias(k, value(k, 0));
  } else if (op == "Dropout") {
    known_attributes(k, {"ratio", "seed"});
    only_first_output(k);
    double ratio = attr_float(k, "ratio", 0.5);
    if (has_input(k, 1)) {
      const Tensor* r = constant(input(k, 1));
      if (!r || !r->is_float || r->f.size() != 1) fail(k, "takes its ratio from another node");
      ratio = r->f[0];
    }
    if (has_input(k, 2)) {
      const Tensor* t = constant(input(k, 2));
      if (!t || (t->is_float ? t->f.size() != 1 || t->f[0] != 0 : t->i.size() != 1 || t->i[0] != 0))
        fail(k, "is in training mode; export the model for inference (model.eval())");
    }
    if (!(ratio >= 0 && ratio < 1)) fail(k, "drops with the ratio " + std::to_string(ratio));
    LayerParams p = layer_spec(LayerType::Dropout).defaults;
    p.p = ratio;
    simple(LayerType::Dropout, p);
  } else if (op == "Conv") {
    conv(k);
  } else if (op == "BatchNormalization") {
    batch_norm(k);
  } else if (op == "Relu") {
    simple(LayerType::ReLU, none);
  } else if (op == "Tanh") {
    simple(LayerType::Tanh, none);
  } else if (op == "Sigmoid") {
    if (!fused_silu(k)) simple(LayerType::Sigmoid, none);
  } else if (op == "LeakyRelu") {
    known_attributes(k, {"alpha"});
    LayerParams p = layer_spec(LayerType::LeakyReLU).defaults;
    p.negative_slope = attr_float(k, "alpha", 0.01);
    simple(LayerType::LeakyReLU, p);
  } else if (op == "Clip") {
    known_attributes(k, {"min", "max"});
    double lo = attr_float(k, "min", -std::numeric_limits<double>::infinity());
    double hi = attr_float(k, "max", std::numeric_limits<double>::infinity());
    for (int i = 1; i <= 2; ++i)
      if (has_input(k, i)) {
        const Tensor* t = constant(input(k, i));
        if (!t || !t->is_float || t->f.size() != 1) fail(k, "takes its bounds from another node");
        (i == 1 ? lo : hi) = t->f[0];
      }
    if (lo != 0 || hi != 6)
      fail(k, "clips to [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "]; the workbench has ReLU6 only (clip to [0, 6])");
    simple(LayerType::ReLU6, none);
  } else if (op == "Div" && fused_gelu(k)) {
    // GELU's five nodes became one layer
  } else if (op == "MaxPool") {
    pool(k, LayerType::MaxPool2d);
  } else if (op == "AveragePool") {
    pool(k, LayerType::AvgPool2d);
  } else if (op == "Pad") {
    pad(k);
  } else if (op == "GlobalAveragePool") {
    const Value x = value(k, 0);
    image_input(k, x);
    simple(LayerType::GlobalAvgPool, none);
  } else if (op == "ReduceMean" && fused_layer_norm(k)) {
    // LayerNorm's nine nodes became one layer
  } else if (op == "ReduceMean") {
    known_attributes(k, {"axes", "keepdims", "noop_with_empty_axes"});
    Dims axes = attr_ints(k, "axes", {});
    if (has_input(k, 1)) {
      const Tensor* t = constant(input(k, 1));
      if (!t || t->is_float) fail(k, "takes its axes from another node");
      axes = t->i;
    }
    const Value x = value(k, 0);
    if (x.rank == 3 && !attr_int(k, "keepdims", 1) && (axes == Dims{1} || axes == Dims{-2})) {
      LayerParams p = layer_spec(LayerType::TokenPool).defaults;
      p.class_token = false;  // the mean of the tokens
      add_layer(k, LayerType::TokenPool, p, {x}, out(k), 2);
      return;
    }
    for (int64_t& ax : axes) ax = ax < 0 ? ax + 4 : ax;
    std::sort(axes.begin(), axes.end());
    image_input(k, x);
    if (axes != Dims{2, 3})
      fail(k, "averages over the axes " + dims_text(axes) +
                  "; the workbench averages over height and width (axes 2 and 3: a "
                  "GlobalAvgPool) or, in a LayerNorm, over the channels (axis 1)");
    if (attr_int(k, "keepdims", 1)) {
      simple(LayerType::GlobalAvgPool, none);
    } else {
      // [N, C]: the average, flattened (a 1x1 image flattens in either order alike)
      const int gap = add_layer(k, LayerType::GlobalAvgPool, none, {x}, out(k) + "/pooled", 4);
      add_layer(k, LayerType::Flatten, none, {Value{gap, 4}}, out(k), 2);
    }
  } else if (op == "Add") {
    const Tensor* c0 = constant(input(k, 0));
    const Tensor* c1 = has_input(k, 1) ? constant(input(k, 1)) : nullptr;
    const Tensor* bias = c0 ? c0 : c1;
    if (bias) {
      // The bias of a MatMul's Linear, written as a separate Add.
      const std::string& from = input(k, c0 ? 1 : 0);
      auto it = values_.find(from);
      const int node = it == values_.end() ? -1 : it->second.node;
      LayerNode* lin = node >= 0 ? &project_.model.nodes[static_cast<size_t>(node)] : nullptr;
      const bool linear_before =
          lin && (lin->type == LayerType::Linear || lin->type == LayerType::TokenLinear) &&
          !lin->params.bias && consumers(from) == 1;
      const bool its_bias = linear_before && bias->count() == lin->params.out_channels;
      if (!its_bias && it != values_.end() && it->second.rank == 3 &&
          position_embedding(k, *bias, it->second))
        return;
      if (!linear_before || !bias->is_float || bias->count() != lin->params.out_channels)
        fail(k, "adds the stored tensor '" + input(k, c0 ? 0 : 1) +
                    "'; the importer takes that only as the bias of the MatMul before it, or "
                    "as a position embedding [1, T, C] added to tokens");
      lin->params.bias = true;
      weights_[lin->id + ".bias"] = bias->f;
      alias(k, it->second);
    } else {
      const Value a = value(k, 0), b = value(k, 1);
      if (a.rank != b.rank) fail(k, "adds an image and a matrix");
      add_layer(k, LayerType::Add, none, {a, b}, out(k), a.rank);
    }
  } else if (op == "Concat" && class_token(k)) {
    // the class token put before the tokens
  } else if (op == "Concat") {
    known_attributes(k, {"axis"});
    std::vector<Value> from;
    for (int i = 0; i < inputs(k); ++i) from.push_back(value(k, i));
    const int rank = from.front().rank;
    for (const Value& v : from)
      if (v.rank != rank) fail(k, "joins images and matrices");
    const int64_t axis = attr_int(k, "axis", 1);
    if (axis != 1 && axis != 1 - rank)
      fail(k, "joins along axis " + std::to_string(axis) +
                  "; the workbench joins channels (or features) only: axis 1");
    if (from.size() < 2 || from.size() > static_cast<size_t>(kMaxInputPorts))
      fail(k, "joins " + std::to_string(from.size()) + " tensors; the workbench joins 2 to " +
                  std::to_string(kMaxInputPorts));
    LayerParams p = layer_spec(LayerType::Concat).defaults;
    p.inputs = static_cast<int64_t>(from.size());
    add_layer(k, LayerType::Concat, p, from, out(k), rank);
  } else if (op == "Flatten") {
    known_attributes(k, {"axis"});
    if (attr_int(k, "axis", 1) != 1)
      fail(k, "flattens from axis " + std::to_string(attr_int(k, "axis", 1)) +
                  "; the workbench flattens all but the batch (axis 1)");
    flatten(k, value(k, 0));
  } else if (op == "Reshape") {
    known_attributes(k, {"allowzero"});
    const Value x = value(k, 0);
    const Tensor* shape = has_input(k, 1) ? constant(input(k, 1)) : nullptr;
    if (!shape || shape->is_float)
      fail(k, "takes its shape from other nodes; re-export with constant folding (the default)");
    const Dims target = shape->i;
    if (target.size() == 3 && image_tokens(k, target)) return;
    if (target.size() == 4 && token_attention(k, target)) return;
    if (target.size() == 3 && x.rank == 2 && target[1] == 1) {
      // A [N, F] matrix as one token: the same values in our layout.
      const int node = x.node;
      after_analysis_.push_back([this, k, node, target](const ModelAnalysis& a) {
        const int64_t features = a.nodes[static_cast<size_t>(node)].output.per_sample();
        if (target[2] > 0 && target[2] != features)
          fail(k, "reshapes " + std::to_string(features) + " features to " + dims_text(target));
      });
      return alias(k, Value{node, 3});
    }
    if (target.size() != 2 || target[0] < -1 || target[1] < -1 ||
        (target[0] == -1 && target[1] == -1))
      fail(k, "reshapes to " + dims_text(target) +
                  "; the importer takes reshapes to [N, features] only (a flatten)");
    flatten(k, x);
    if (target[1] > 0) {
      const int node = values_.at(out(k)).node;
      after_analysis_.push_back([this, k, node, target](const ModelAnalysis& a) {
        const int64_t features = a.nodes[static_cast<size_t>(node)].output.per_sample();
        if (features != target[1])
          fail(k, "reshapes to " + dims_text(target) + " but each sample holds " +
                      std::to_string(features) + " values");
      });
    }
  } else if (op == "Transpose" && fused_attention(k)) {
    // nn.MultiheadAttention's thirty-odd nodes became three layers
  } else if (op == "Transpose" && tokens_image(k)) {
    // tokens as the image they are in our layout: no layer
  } else if (op == "Shape" && batch_expand(k)) {
    // a class token's expand over the batch: the stored token, read by the Concat after it
  } else if (op == "Transpose") {
    fail(k,
         "is not part of the tokens of an image (Reshape to [N, C, H*W], Transpose 0, 2, 1) or of "
         "nn.MultiheadAttention's self-attention (its input transposed 1, 0, 2); the importer "
         "takes 'Transpose' only there");
  } else if (op == "Gather") {
    token_pool(k);
  } else if (op == "Gemm") {
    gemm(k);
  } else if (op == "MatMul") {
    const Value x = value(k, 0);
    linear(k, weight(k, 1, "weight matrix"), false, nullptr, x);
  } else if (op == "Softmax" || op == "LogSoftmax") {
    if (!outputs_.count(out(k)))
      fail(k,
           "is not the model's last operator; the importer takes it only there, where the "
           "loss computes it");
    alias(k, value(k, 0));
    notes_.push_back("the model's last " + op + " is left out: the loss computes it, and predict " +
                     "prints the probabilities");
  } else if (op == "Div" || op == "Erf" || op == "Mul" || op == "Sub" || op == "Pow" ||
             op == "Sqrt") {
    const std::string gelu =
        "a GELU (x / sqrt 2, Erf, + 1, times x, times 0.5, as PyTorch writes it)";
    const std::string layer_norm =
        "a LayerNorm over the channels (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, "
        "Mul by the scale, Add the shift, as PyTorch writes it below opset 17)";
    std::string part = op == "Erf" ? gelu : layer_norm;
    if (op == "Div") part = gelu + " or " + layer_norm;
    if (op == "Mul") part = gelu + ", a SiLU (x times Sigmoid(x)) or " + layer_norm;
    fail(k, "is not part of " + part + "; the importer takes '" + op + "' only there");
  } else {
    std::set<std::string> names;
    for (const OnnxOpSupport& s : kOps)
      for (size_t at = 0; at < s.op.size();) {
        const size_t end = std::min(s.op.find(", ", at), s.op.size());
        names.insert(std::string(s.op.substr(at, end - at)));
        at = end + 2;
      }
    std::string ops;
    for (const std::string& name : names) ops += (ops.empty() ? "" : ", ") + name;
    fail(k,
         "the workbench has no layer for the ONNX operator '" + op + "' (it imports " + ops + ")");
  }
}

void Importer::finish_output() {
  if (graph_.output_size() != 1)
    fail("the model has " + std::to_string(graph_.output_size()) +
         " outputs; the workbench's models have one: the class scores");
  const std::string& o = graph_.output(0).name();
  auto it = values_.find(o);
  if (it == values_.end()) fail("no layer writes the model's output '" + o + "'");
  LayerNode loss;
  loss.id = "loss";
  loss.type = LayerType::SoftmaxCrossEntropy;
  project_.model.nodes.push_back(loss);
  onnx_of_.push_back(-1);
  project_.model.edges.push_back(
      {it->second.node, 0, static_cast<int>(project_.model.nodes.size()) - 1, 0});
}

// Our export writes a MultiHeadSelfAttention as its parts: a TokenLinear
// 'X.in_proj' to 3C, the attention and a TokenLinear 'X.out_proj' back to C,
// each read only by the next. They become that one layer 'X' again, so a
// model comes back as it was exported; the weights keep their names.
void Importer::fold_attention_parts(const ModelAnalysis& a) {
  auto& nodes = project_.model.nodes;
  const auto sole_reader = [&](size_t n) {
    const auto& c = a.consumers[n];
    return c.size() == 1 ? static_cast<size_t>(c.front().node) : nodes.size();
  };
  std::vector<int> gone(nodes.size(), -1);  // folded into that node
  for (size_t i = 0; i < nodes.size(); ++i) {
    LayerNode& in = nodes[i];
    constexpr std::string_view suffix = ".in_proj";
    if (in.type != LayerType::TokenLinear || !in.id.ends_with(suffix)) continue;
    const std::string id = in.id.substr(0, in.id.size() - suffix.size());
    const size_t at = sole_reader(i);
    if (at == nodes.size() || nodes[at].type != LayerType::SelfAttention) continue;
    const size_t out = sole_reader(at);
    if (out == nodes.size()) continue;
    const LayerNode& o = nodes[out];
    const int64_t c = a.nodes[i].inputs.at(0).c;
    if (o.type != LayerType::TokenLinear || o.id != id + ".out_proj" ||
        o.params.bias != in.params.bias || in.params.out_channels != 3 * c ||
        o.params.out_channels != c || project_.model.find(id) >= 0)
      continue;
    LayerParams p = layer_spec(LayerType::MultiHeadSelfAttention).defaults;
    p.heads = nodes[at].params.heads;
    p.attention_dropout = nodes[at].params.attention_dropout;
    p.bias = in.params.bias;
    in.id = id;
    in.type = LayerType::MultiHeadSelfAttention;
    in.params = p;
    gone[at] = gone[out] = static_cast<int>(i);
  }
  if (std::all_of(gone.begin(), gone.end(), [](int g) { return g < 0; })) return;
  std::vector<int> index(nodes.size());
  std::vector<LayerNode> kept;
  std::vector<int> kept_onnx;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (gone[i] >= 0) continue;
    index[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(nodes[i]));
    kept_onnx.push_back(onnx_of_[i]);
  }
  for (size_t i = 0; i < nodes.size(); ++i)
    if (gone[i] >= 0) index[i] = index[static_cast<size_t>(gone[i])];
  std::vector<Edge> edges;
  for (const Edge& e : project_.model.edges) {
    // The edges inside a folded layer go; its out_proj's readers read the layer.
    if (gone[static_cast<size_t>(e.to)] >= 0) continue;
    edges.push_back({index[static_cast<size_t>(e.from)], e.from_port,
                     index[static_cast<size_t>(e.to)], e.to_port});
  }
  nodes = std::move(kept);
  onnx_of_ = std::move(kept_onnx);
  project_.model.edges = std::move(edges);
}

void Importer::check_and_relayout(const ModelAnalysis& a) {
  orders_ = feature_orders(project_.model, a);  // once, for every Linear's columns
  classes_ = a.nodes[static_cast<size_t>(a.source_of(a.loss_node, 0).node)].output.c;
  for (const auto& check : after_analysis_) check(a);
}

DatasetSpec Importer::dataset(std::vector<std::string>& notes) const {
  namespace key = onnx_metadata;
  std::map<std::string, std::string> meta;
  for (const onnx::StringStringEntryProto& e : model_.metadata_props()) meta[e.key()] = e.value();
  const auto recorded = [&](const char* k) -> const std::string* {
    const auto it = meta.find(k);
    return it == meta.end() ? nullptr : &it->second;
  };
  const auto fits = [&](const DatasetKindInfo& info) {
    return !info.fixed_shape || (info.height == input_.h && info.width == input_.w &&
                                 info.channels == input_.c && info.classes == classes_);
  };

  // The dataset kind the file names, where it fits the model; never one
  // guessed from the input's shape.
  const DatasetKindInfo* named = nullptr;
  if (const std::string* k = recorded(key::kDataset)) {
    for (const DatasetKindInfo& info : dataset_kinds())
      if (*k == info.name) named = &info;
    if (!named)
      notes.push_back("the file names an unknown dataset kind \"" + *k + "\": left aside");
    else if (!fits(*named)) {
      notes.push_back(std::string("the file names ") + named->title +
                      ", whose images or classes are not the model's: left aside");
      named = nullptr;
    }
  }
  if (named && named->kind == DatasetKind::Synthetic) named = nullptr;  // nothing to read again
  const DatasetKindInfo& info = named ? *named : dataset_kind_info(DatasetKind::ImageFolder);
  DatasetSpec d;
  d.kind = info.kind;
  d.height = input_.h;
  d.width = input_.w;
  d.channels = input_.c;
  d.classes = classes_;
  if (info.fixed_shape) {
    d.train_size = info.train_size;
    d.val_size = info.val_size;
    notes.push_back(std::string("it was trained on ") + info.title +
                    " (recorded in the file), so the project trains on it");
  } else {
    d.train_size = d.val_size = 0;
    notes.push_back("the project reads an image folder of " + std::to_string(classes_) +
                    " classes: set its training and validation folders before training");
  }

  // The class names, as the file records them; else "class 0", "class 1", ...
  std::string names_note;
  if (const std::string* text = recorded(key::kClassNames)) {
    std::vector<std::string> names;
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    bool ok = j.is_array() && static_cast<int64_t>(j.size()) == classes_;
    for (size_t i = 0; ok && i < j.size(); ++i) {
      ok = j[i].is_string() && !j[i].get_ref<const std::string&>().empty() &&
           std::find(names.begin(), names.end(), j[i].get<std::string>()) == names.end();
      if (ok) names.push_back(j[i].get<std::string>());
    }
    if (ok) {
      if (!info.fixed_shape) d.class_names = names;
      names_note = "the class names recorded in the file (" + names.front() + ", ...)";
    } else {
      names_note = "the file's class names (" + std::string(key::kClassNames) +
                   ") are not a list of " + std::to_string(classes_) +
                   " distinct names, so they are left aside";
    }
  }
  if (d.class_names.empty() && !info.fixed_shape) {
    if (!names_note.empty()) names_note += "; ";
    names_note +=
        "the file does not say what the classes are called: they are \"class 0\" to "
        "\"class " +
        std::to_string(classes_ - 1) +
        "\" until the project's image "
        "folders name them";
    // A hint, not a guess: the user knows what the model learnt.
    for (const DatasetKindInfo& k : dataset_kinds())
      if (k.fixed_shape && fits(k))
        names_note += std::string(" (its input and classes have ") + k.title +
                      "'s shape; if it learnt " + k.title + ", set the dataset kind to \"" +
                      k.name + "\")";
  }
  if (!names_note.empty()) notes.push_back("classes: " + names_note);

  const auto per_channel = [&](std::vector<double> v, const char* what) {
    if (v.size() == 1) v.assign(static_cast<size_t>(input_.c), v[0]);
    if (v.size() != static_cast<size_t>(input_.c))
      throw UsageError("the " + std::string(what) + " has " + std::to_string(v.size()) +
                       " values but the model's input has " + std::to_string(input_.c) +
                       " channels");
    return v;
  };
  const auto listed = [&](const char* k) {
    std::vector<double> v;
    const std::string* text = recorded(k);
    if (!text) return v;
    size_t at = 0;
    while (at < text->size()) {
      size_t end = text->find(',', at);
      if (end == std::string::npos) end = text->size();
      try {
        v.push_back(std::stod(text->substr(at, end - at)));
      } catch (const std::exception&) {
        return std::vector<double>{};
      }
      at = end + 1;
    }
    return v;
  };
  std::vector<double> mean = options_.mean, stdev = options_.std;
  std::string source = "as given";
  if (mean.empty() && stdev.empty() && !listed(key::kMean).empty()) {
    mean = listed(key::kMean);
    stdev = listed(key::kStd);
    source = "recorded in the file";
  } else if (mean.empty() && stdev.empty() && info.fixed_shape) {
    mean.assign(info.mean, info.mean + input_.c);
    stdev.assign(info.std, info.std + input_.c);
    source = std::string("the usual ") + info.title + " figures; give --mean and --std if the " +
             "model was trained with others";
  } else if (mean.empty() && stdev.empty()) {
    source = "none recorded: the model sees pixel / 255; give --mean and --std as it was trained";
  }
  d.mean = per_channel(mean.empty() ? std::vector<double>{0.0} : mean, "mean");
  d.std = per_channel(stdev.empty() ? std::vector<double>{1.0} : stdev, "standard deviation");
  for (double v : d.std)
    if (!(v > 0))
      throw UsageError("a standard deviation must be above 0, got " + std::to_string(v));
  std::string text;
  for (size_t c = 0; c < d.mean.size(); ++c) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%g/%g", c ? ", " : "", d.mean[c], d.std[c]);
    text += buf;
  }
  notes.push_back("input normalisation (mean/std per channel) " + text + ": " + source);
  return d;
}

Checkpoint Importer::checkpoint() const {
  // The weights' shapes do not depend on the data: an image folder not yet
  // counted plans as one of a batch a split.
  Project sized = project_;
  if (sized.dataset.train_size == 0 || sized.dataset.val_size == 0)
    sized.dataset.train_size = sized.dataset.val_size =
        sized.training.global_batch * sized.training.devices.world_size();
  const CompiledProject cp = compile_project(sized);
  const MemoryPlan& plan = cp.plans.front();
  Checkpoint c;
  c.project_name = project_.name;
  c.project_json = project_to_json(project_);
  c.seed = project_.training.seed;
  c.global_batch = project_.training.global_batch;
  c.optimizer = std::string(optimizer_name(project_.training.optimizer.kind));
  c.precision = std::string(precision_name(project_.training.precision));
  std::set<std::string> used;
  auto take = [&](Region first, Region last) {
    for (int r = region_index(first); r <= region_index(last); ++r)
      for (DTensorId id : plan.region(static_cast<Region>(r)).tensors) {
        const DTensor& t = plan.get_dtensor(id);
        auto it = weights_.find(t.name);
        if (it == weights_.end() || static_cast<int64_t>(it->second.size()) != t.shape.elements())
          throw std::logic_error("onnx import: no values for " + t.name + " " + t.shape.str());
        c.tensors.push_back({std::string(region_name(t.region)), t.name, t.shape, it->second});
        used.insert(t.name);
      }
  };
  take(Region::B_PREV_MEAN, Region::B_PREV_VAR);
  take(Region::W_BN_BIAS, Region::W_DEEP_CONV);
  for (const auto& [name, v] : weights_)
    if (!used.count(name))
      throw std::logic_error("onnx import: " + name + " has no place in the plan");
  return c;
}

OnnxImportResult Importer::run() {
  for (const onnx::OperatorSetIdProto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ == 0) fail("it names no version of the standard operators (opset)");
  if (opset_ < 7 || opset_ > 21)
    fail("it uses opset " + std::to_string(opset_) + "; the importer reads opsets 7 to 21");
  read_constants();
  for (const onnx::ValueInfoProto& o : graph_.output()) outputs_.insert(o.name());
  for (int k = 0; k < graph_.node_size(); ++k) {
    for (const std::string& in : graph_.node(k).input())
      if (!in.empty()) consumers_[in].push_back(k);
    for (const std::string& o : graph_.node(k).output())
      if (!o.empty()) producer_[o] = k;
  }
  read_input();
  done_.assign(static_cast<size_t>(graph_.node_size()), false);
  // Constants first: a pattern matched at its first node reads those of its later ones.
  for (int k = 0; k < graph_.node_size(); ++k)
    if (graph_.node(k).op_type() == "Constant") {
      convert(k);
      done_[static_cast<size_t>(k)] = true;
    }
  for (int k = 0; k < graph_.node_size(); ++k)
    if (!done_[static_cast<size_t>(k)]) convert(k);
  finish_output();

  std::string name = options_.name;
  if (name.empty()) name = std::filesystem::path(path_).stem().string();
  project_.name = name;
  project_.description =
      "Imported from " + std::filesystem::path(path_).filename().string() +
      (model_.producer_name().empty()
           ? ""
           : " (written by " + model_.producer_name() + " " + model_.producer_version() + ")");
  // The classes are the output's size: analysed once to find it, then for real.
  project_.dataset.height = input_.h;
  project_.dataset.width = input_.w;
  project_.dataset.channels = input_.c;
  {
    const ModelAnalysis first = analyze_model(project_, 1);
    const int loss = static_cast<int>(project_.model.nodes.size()) - 1;
    const int logits = first.source_of(loss, 0).node;
    if (logits >= 0 && first.nodes[static_cast<size_t>(logits)].known) {
      const Shape s = first.nodes[static_cast<size_t>(logits)].output;
      if (!s.is_flat())
        fail("the model's output is an image of " + std::to_string(s.h) + "x" +
             std::to_string(s.w) + " with " + std::to_string(s.c) +
             " channels, not one score per class");
      project_.dataset.classes = s.c;
    }
  }
  const ModelAnalysis a = analyze_model(project_, 1);
  if (!a.ok()) refuse(a.problems, "the imported graph does not make a model:", false);
  check_and_relayout(a);
  fold_attention_parts(a);
  std::vector<std::string> notes = notes_;
  project_.dataset = dataset(notes);
  // Saved without variants, the file gets those a project file without
  // them does (project_io.h); parsing it proves it loads as it will be saved.
  nlohmann::json file = nlohmann::json::parse(project_to_json(project_));
  file.erase("variants");
  try {
    project_ = parse_project(file.dump(), name);
  } catch (const ProjectError& e) {
    refuse(e.diagnostics(), "the imported model does not make a project that loads:", true);
  }

  OnnxImportResult r;
  try {
    r.checkpoint = checkpoint();
  } catch (const ProjectError& e) {
    refuse(e.diagnostics(), "the imported model does not compile:", true);
  }
  for (const CheckpointTensor& t : r.checkpoint.tensors)
    if (t.region.rfind("W_", 0) == 0) parameters_ += static_cast<int64_t>(t.values.size());
  r.project = project_;
  r.onnx_nodes = graph_.node_size();
  r.parameters = parameters_;
  r.opset = opset_;
  r.producer = model_.producer_name() +
               (model_.producer_version().empty() ? "" : " " + model_.producer_version());
  r.notes = std::move(notes);
  return r;
}

}  // namespace

std::span<const OnnxOpSupport> onnx_import_ops() noexcept {
  return kOps;
}

OnnxImportResult import_onnx(const std::string& path, const OnnxImportOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw UsageError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(path + ": a folder, not an ONNX file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot be read");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw UsageError(path + ": not an ONNX model (the file does not parse as one; is it cut off?)");
  if (!model.has_graph() || model.graph().node_size() == 0)
    throw UsageError(path + ": not an ONNX model (it holds no graph)");
  return Importer(path, model, options).run();
}

}  // namespace tr

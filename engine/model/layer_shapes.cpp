// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/layer_shapes.h"

namespace tr {

namespace {

bool refuse(ShapeQuery& q, std::string problem, std::string field = {}) {
  q.problem = std::move(problem);
  q.field = std::move(field);
  return false;
}

// Conv2d/Linear: false without outputs, e.g. a node just dropped in.
bool positive_outputs(ShapeQuery& q, const char* field) {
  if (q.params.out_channels >= 1) return true;
  return refuse(
      q, "needs a positive number of outputs, not " + std::to_string(q.params.out_channels), field);
}

// Conv/pool output extent; false when the window does not fit.
bool window(ShapeQuery& q, const char* field) {
  const LayerParams& pr = q.params;
  const Shape& in = q.inputs[0];
  if (pr.kernel_h < 1 || pr.kernel_w < 1 || pr.stride_h < 1 || pr.stride_w < 1 || pr.pad_h < 0 ||
      pr.pad_w < 0)
    return refuse(q,
                  "kernel " + std::to_string(pr.kernel_h) + "x" + std::to_string(pr.kernel_w) +
                      ", stride " + std::to_string(pr.stride_h) + "x" +
                      std::to_string(pr.stride_w) + ", padding " + std::to_string(pr.pad_h) + "x" +
                      std::to_string(pr.pad_w) +
                      ": kernel and stride must be at least 1 and padding at least 0",
                  "params");
  const int64_t oh = (in.h + 2 * pr.pad_h - pr.kernel_h) / pr.stride_h + 1;
  const int64_t ow = (in.w + 2 * pr.pad_w - pr.kernel_w) / pr.stride_w + 1;
  if (in.h + 2 * pr.pad_h < pr.kernel_h || in.w + 2 * pr.pad_w < pr.kernel_w || oh < 1 || ow < 1)
    return refuse(q,
                  "kernel " + std::to_string(pr.kernel_h) + "x" + std::to_string(pr.kernel_w) +
                      " with padding " + std::to_string(pr.pad_h) + "x" + std::to_string(pr.pad_w) +
                      " does not fit the " + std::to_string(in.h) + "x" + std::to_string(in.w) +
                      " input; use a smaller kernel or more padding",
                  std::string("params.") + field);
  q.out = {in.n, oh, ow, in.c};
  return true;
}

// Attention's heads split the C channels of its queries evenly, each no wider
// than a kernel holds.
bool heads_fit(ShapeQuery& q, int64_t c) {
  const int64_t heads = q.params.heads;
  if (heads < 1 || c % heads != 0)
    return refuse(q,
                  std::to_string(heads) + " heads do not divide the " + std::to_string(c) +
                      " channels of its queries; choose a divisor of " + std::to_string(c),
                  "params.heads");
  if (c / heads > kMaxHeadChannels)
    return refuse(q,
                  "heads of " + std::to_string(c / heads) + " channels are wider than " +
                      std::to_string(kMaxHeadChannels) + "; use at least " +
                      std::to_string((c + kMaxHeadChannels - 1) / kMaxHeadChannels) + " heads",
                  "params.heads");
  return true;
}

// q k^T and p v over `in`'s tokens: 2 x T x T x C multiply-adds a sample.
int64_t attention_flops(const Shape& in, int64_t c) {
  const int64_t tokens = in.h * in.w;
  return 4 * in.n * tokens * tokens * c;
}

}  // namespace

std::string dims(const Shape& s) {
  return "[N," + std::to_string(s.h) + "," + std::to_string(s.w) + "," + std::to_string(s.c) + "]";
}

bool input_shape(ShapeQuery& q) {
  const LayerParams& pr = q.params;
  q.out = {q.batch, q.height > 0 ? q.height : pr.height, q.width > 0 ? q.width : pr.width,
           pr.channels};
  if (q.out.h < 1 || q.out.w < 1 || q.out.c < 1)
    return refuse(q,
                  "needs a positive height, width and channels, not " + std::to_string(q.out.h) +
                      "x" + std::to_string(q.out.w) + "x" + std::to_string(q.out.c),
                  "params");
  return true;
}

bool conv_shape(ShapeQuery& q) {
  const LayerParams& pr = q.params;
  if (!positive_outputs(q, "params.out_channels") || !window(q, "kernel")) return false;
  const int64_t in_c = q.inputs[0].c;
  if (pr.groups < 1 || in_c % pr.groups != 0 || pr.out_channels % pr.groups != 0)
    return refuse(q,
                  std::to_string(pr.groups) + " groups do not divide the " + std::to_string(in_c) +
                      " input channels and the " + std::to_string(pr.out_channels) +
                      " output channels; both must be multiples of groups (groups = the input "
                      "channels is a depthwise convolution)",
                  "params.groups");
  q.out.c = pr.out_channels;
  const int64_t k = pr.kernel_h * pr.kernel_w * (in_c / pr.groups);
  q.param_count = k * pr.out_channels + (pr.bias ? pr.out_channels : 0);
  q.flops = 2 * q.out.elements() * k + (pr.bias ? q.out.elements() : 0);
  return true;
}

bool batch_norm_shape(ShapeQuery& q) {
  q.param_count = 2 * q.inputs[0].c;
  q.flops = 4 * q.inputs[0].elements();
  return true;
}

// Each position's channels are one row: a single channel would normalise
// every value to 0, leaving the shift alone.
bool layer_norm_shape(ShapeQuery& q) {
  const int64_t c = q.inputs[0].c;
  if (c < 2)
    return refuse(q, "normalises the channels of each position, and its input " +
                         dims(q.inputs[0]) +
                         " has 1: every value would become 0; put it where a position has 2 or "
                         "more channels (a token's features)");
  q.param_count = 2 * c;
  q.flops = 8 * q.inputs[0].elements();
  return true;
}

bool elementwise_shape(ShapeQuery& q) {
  q.flops = q.inputs[0].elements();
  return true;
}

bool pool_shape(ShapeQuery& q) {
  const LayerParams& pr = q.params;
  if (pr.pad_h * 2 > pr.kernel_h || pr.pad_w * 2 > pr.kernel_w)
    return refuse(q,
                  "padding " + std::to_string(pr.pad_h) + "x" + std::to_string(pr.pad_w) +
                      " is more than half the kernel " + std::to_string(pr.kernel_h) + "x" +
                      std::to_string(pr.kernel_w) + "; use at most kernel/2",
                  "params.padding");
  if (!window(q, "kernel")) return false;
  q.flops = q.out.elements() * pr.kernel_h * pr.kernel_w;
  return true;
}

bool global_pool_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  q.out = {in.n, 1, 1, in.c};
  q.flops = in.elements();
  return true;
}

bool flatten_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  q.out = {in.n, 1, 1, in.per_sample()};
  return true;
}

bool linear_shape(ShapeQuery& q) {
  const LayerParams& pr = q.params;
  if (!positive_outputs(q, "params.out_features")) return false;
  const Shape& in = q.inputs[0];
  const int64_t k = in.per_sample();
  q.out = {in.n, 1, 1, pr.out_channels};
  q.param_count = k * pr.out_channels + (pr.bias ? pr.out_channels : 0);
  q.flops = 2 * in.n * k * pr.out_channels + (pr.bias ? q.out.elements() : 0);
  return true;
}

// One weight matrix for every position: [N,H,W,C] -> [N,H,W,F].
bool token_linear_shape(ShapeQuery& q) {
  const LayerParams& pr = q.params;
  if (!positive_outputs(q, "params.out_features")) return false;
  const Shape& in = q.inputs[0];
  q.out.c = pr.out_channels;
  q.param_count = in.c * pr.out_channels + (pr.bias ? pr.out_channels : 0);
  q.flops = 2 * in.n * in.h * in.w * in.c * pr.out_channels + (pr.bias ? q.out.elements() : 0);
  return true;
}

// Each token's queries, keys and values side by side: [N,H,W,3C] -> [N,H,W,C].
bool self_attention_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  if (in.c % 3 != 0)
    return refuse(q,
                  "reads each token's queries, keys and values side by side, 3 x C channels, "
                  "and its input " +
                      dims(in) + " has " + std::to_string(in.c) +
                      "; put a TokenLinear with 3 x C outputs before it");
  const int64_t c = in.c / 3;
  if (!heads_fit(q, c)) return false;
  q.out.c = c;
  q.flops = attention_flops(in, c);
  return true;
}

// The projections to queries, keys and values and back around the attention.
bool multi_head_attention_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  if (!heads_fit(q, in.c)) return false;
  const int64_t c = in.c, tokens = in.n * in.h * in.w, biases = q.params.bias ? 4 * c : 0;
  q.param_count = 4 * c * c + biases;
  q.flops = 2 * tokens * c * 4 * c + tokens * biases + attention_flops(in, c);
  return true;
}

// A learned value for every position and channel, added to every sample.
bool position_embedding_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  q.param_count = in.h * in.w * in.c;
  q.flops = in.elements();
  return true;
}

// [N,H,W,C] -> [N,1,1+H*W,C]: the learned token first, then the positions in row order.
bool class_token_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  q.out = {in.n, 1, in.h * in.w + 1, in.c};
  q.param_count = in.c;
  return true;
}

// [N,H,W,C] -> [N,1,1,C]: the first token, or the mean of them all.
bool token_pool_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  q.out = {in.n, 1, 1, in.c};
  q.flops = q.params.class_token ? 0 : in.elements();
  return true;
}

bool add_shape(ShapeQuery& q) {
  if (!(q.inputs[0] == q.inputs[1]))
    return refuse(q, "input shapes differ: port 0 gets " + dims(q.inputs[0]) + ", port 1 gets " +
                         dims(q.inputs[1]) + "; both branches must end in the same shape");
  q.flops = q.inputs[0].elements();
  return true;
}

bool concat_shape(ShapeQuery& q) {
  const Shape& a = q.inputs[0];
  q.out.c = 0;
  for (size_t port = 0; port < q.inputs.size(); ++port) {
    const Shape& b = q.inputs[port];
    if (a.n != b.n || a.h != b.h || a.w != b.w)
      return refuse(q, "inputs differ in height or width: port 0 gets " + dims(a) + ", port " +
                           std::to_string(port) + " gets " + dims(b) +
                           "; only the channels may differ");
    q.out.c += b.c;
  }
  q.flops = 0;  // copies
  return true;
}

bool loss_shape(ShapeQuery& q) {
  const Shape& in = q.inputs[0];
  if (!in.is_flat())
    return refuse(q, "expects a flat input [N,1,1,classes] but gets " + dims(in) +
                         "; add Flatten or GlobalAvgPool and a Linear layer before it");
  if (in.c != q.classes)
    return refuse(q, "receives " + std::to_string(in.c) +
                         " scores per sample but the dataset has " + std::to_string(q.classes) +
                         " classes; make the last Linear layer output " +
                         std::to_string(q.classes));
  q.flops = 5 * in.elements();
  return true;
}

}  // namespace tr

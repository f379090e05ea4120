// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/layer_lowering.h"

#include "compile/stream_policy.h"

namespace tr {

GraphNode compute_node(ComputeOp op, std::vector<DTensorId> in, std::vector<DTensorId> out,
                       int layer) {
  GraphNode n;
  n.kind = NodeKind::COMPUTE;
  n.op = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.layer = layer;
  return n;
}

namespace {

// A one-input, one-output op: the forward x -> out.
template <ComputeOp Op>
GraphNode unary_forward(const LoweringInputs& in) {
  return compute_node(Op, {in.x}, {in.t->out}, in.layer);
}

// A backward that reads only the output's gradient: grad -> dx.
template <ComputeOp Op>
GraphNode grad_only_backward(const LoweringInputs& in) {
  return compute_node(Op, {in.t->grad}, {in.dx}, in.layer);
}

// Conv2d and Linear: x, weights (and bias) -> out.
template <ComputeOp Op>
GraphNode weighted_forward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  std::vector<DTensorId> ids{in.x, t.weight_in(in.weights)};
  if (t.bias_in(in.weights) != kNoTensor) ids.push_back(t.bias_in(in.weights));
  return compute_node(Op, ids, {t.out}, in.layer);
}

// Their backward, forked: dW, (dB,) dX.
template <ComputeOp Op>
GraphNode weighted_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  const bool bias = t.bias_in(in.grads) != kNoTensor;
  std::vector<DTensorId> out{t.weight_in(in.grads)};
  if (bias) out.push_back(t.bias_in(in.grads));
  out.push_back(in.dx);
  GraphNode n = compute_node(Op, {in.x, t.weight_in(in.weights), t.grad}, out, in.layer);
  n.fork = fork_parts(n.op, bias);
  return n;
}

GraphNode batch_norm_forward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  const bool relu = t.fused_relu >= 0;
  if (!in.training)
    return compute_node(relu ? ComputeOp::BN_RELU_FWD_INFER : ComputeOp::BN_FWD_INFER,
                        {in.x, t.eq_scale, t.eq_bias}, {t.out}, in.layer);
  // Scale and shift are FP32 at every precision (the W series; no 16-bit copy).
  constexpr ParamSeries W = ParamSeries::W;
  return compute_node(relu ? ComputeOp::BN_RELU_FWD_TRAIN : ComputeOp::BN_FWD_TRAIN,
                      {in.x, t.weight_in(W), t.bias_in(W), t.prev_mean, t.prev_var},
                      {t.out, t.saved, t.next_mean, t.next_var}, in.layer);
}

// Their gradients are FP32 too, written straight into G.
GraphNode batch_norm_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  constexpr ParamSeries W = ParamSeries::W, G = ParamSeries::G;
  if (t.fused_relu >= 0)
    return compute_node(ComputeOp::BN_RELU_BWD,
                        {in.x, t.weight_in(W), t.bias_in(W), t.saved, t.grad},
                        {t.weight_in(G), t.bias_in(G), in.dx}, in.layer);
  return compute_node(ComputeOp::BN_BWD, {in.x, t.weight_in(W), t.saved, t.grad},
                      {t.weight_in(G), t.bias_in(G), in.dx}, in.layer);
}

// Layer norm's scale and shift are FP32 at every precision, as batch norm's.
GraphNode layer_norm_forward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  constexpr ParamSeries W = ParamSeries::W;
  return compute_node(ComputeOp::LAYER_NORM_FWD, {in.x, t.weight_in(W), t.bias_in(W)},
                      {t.out, t.saved}, in.layer);
}

GraphNode layer_norm_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  constexpr ParamSeries W = ParamSeries::W, G = ParamSeries::G;
  return compute_node(ComputeOp::LAYER_NORM_BWD, {in.x, t.weight_in(W), t.saved, t.grad},
                      {t.weight_in(G), t.bias_in(G), in.dx}, in.layer);
}

// The scores' log-sum-exp is all the backward keeps of the softmax. A
// forward that writes it is a training forward, where the layer's dropout
// applies; inference writes o alone.
GraphNode attention_forward(const LoweringInputs& in) {
  if (!in.training) return compute_node(ComputeOp::ATTENTION_FWD, {in.x}, {in.t->out}, in.layer);
  return compute_node(ComputeOp::ATTENTION_FWD, {in.x}, {in.t->out, in.t->saved}, in.layer);
}

GraphNode attention_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  return compute_node(ComputeOp::ATTENTION_BWD, {in.x, t.out, t.saved, t.grad}, {in.dx}, in.layer);
}

GraphNode relu_backward(const LoweringInputs& in) {
  // y > 0 exactly where x > 0, so either carries the mask. The output does
  // unless it already holds the next layer's in-place dX: then the input
  // must live into the backward, else it dies at the forward.
  const LayerTensors& t = *in.t;
  return compute_node(ComputeOp::RELU_BWD, {t.grad_in_place ? in.x : t.out, t.grad}, {in.dx},
                      in.layer);
}

// Its sub-kind reaches the kernels through NodeParams::activation.
template <Activation A>
GraphNode activation_backward(const LoweringInputs& in) {
  return compute_node(ComputeOp::ACTIVATION_BWD,
                      {activation_backward_reads_output(A) ? in.t->out : in.x, in.t->grad}, {in.dx},
                      in.layer);
}

template <Activation A>
constexpr LayerLowering activation() {
  return {&unary_forward<ComputeOp::ACTIVATION_FWD>, &activation_backward<A>,
          activation_backward_reads_output(A), A};
}

// With `where` (LayerRewrite::pool_where) training keeps each window's
// maximum's position instead of the input; inference needs neither.
GraphNode maxpool_forward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  if (in.training && t.mask != kNoTensor)
    return compute_node(ComputeOp::MAXPOOL_FWD_WHERE, {in.x}, {t.out, t.mask}, in.layer);
  return compute_node(ComputeOp::MAXPOOL_FWD, {in.x}, {t.out}, in.layer);
}

GraphNode maxpool_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  if (t.mask != kNoTensor)
    return compute_node(ComputeOp::MAXPOOL_BWD_WHERE, {t.mask, t.grad}, {in.dx}, in.layer);
  return compute_node(ComputeOp::MAXPOOL_BWD, {in.x, t.out, t.grad}, {in.dx}, in.layer);
}

GraphNode dropout_forward(const LoweringInputs& in) {
  if (!in.training) return compute_node(ComputeOp::IDENTITY, {in.x}, {in.t->out}, in.layer);
  return compute_node(ComputeOp::DROPOUT_FWD, {in.x}, {in.t->out, in.t->mask}, in.layer);
}

GraphNode dropout_backward(const LoweringInputs& in) {
  return compute_node(ComputeOp::DROPOUT_BWD, {in.t->mask, in.t->grad}, {in.dx}, in.layer);
}

// With its ReLU fused (LayerTensors::fused_relu) the output is the ReLU's,
// and the backward's mask comes from it.
GraphNode add_forward(const LoweringInputs& in) {
  const bool relu = in.t->fused_relu >= 0;
  return compute_node(relu ? ComputeOp::ADD_RELU_FWD : ComputeOp::ADD_FWD, in.xs, {in.t->out},
                      in.layer);
}

GraphNode add_backward(const LoweringInputs& in) {
  const LayerTensors& t = *in.t;
  if (t.fused_relu >= 0)
    return compute_node(ComputeOp::ADD_RELU_BWD, {t.grad, t.out}, in.dxs, in.layer);
  return compute_node(ComputeOp::ADD_BWD, {t.grad}, in.dxs, in.layer);
}

GraphNode concat_forward(const LoweringInputs& in) {
  return compute_node(ComputeOp::CONCAT_FWD, in.xs, {in.t->out}, in.layer);
}

GraphNode concat_backward(const LoweringInputs& in) {
  return compute_node(ComputeOp::CONCAT_BWD, {in.t->grad}, in.dxs, in.layer);
}

GraphNode loss_forward(const LoweringInputs& in) {
  const EngineTensors& e = *in.engine;
  if (!in.training) {
    // The confusion counts add up over the validation batches.
    GraphNode n = compute_node(ComputeOp::SOFTMAX_CE_FWD, {in.x, e.labels[in.buffer]},
                               {e.result, e.confusion}, in.layer);
    n.accumulate_mask = 0b10;
    return n;
  }
  return compute_node(ComputeOp::SOFTMAX_CE_FWD_BWD, {in.x, e.active_labels}, {e.result, in.dx},
                      in.layer);
}

// ---- the tensors layers own ----------------------------------------------------

// Conv2d and Linear: weights (and bias) in their kind's regions (the first
// convolution's apart, as it alone reads the input buffer), LARS norms.
template <bool Conv>
void weighted_tensors(const OwnedTensors& o, LayerTensors& t) {
  const LayerParams& p = o.node->params;
  const ParamKind wk =
      Conv ? (o.first ? ParamKind::FIRST_CONV : ParamKind::DEEP_CONV) : ParamKind::FC_WEIGHT;
  const ParamKind bk = Conv ? wk : ParamKind::FC_BIAS;
  const Shape& x = o.analysis->inputs[0];
  const int64_t co = p.out_channels;
  // A grouped convolution's filter sees its group's share of the input channels.
  const Shape ws =
      Conv ? Shape{co, p.kernel_h, p.kernel_w, x.c / p.groups} : Shape{co, 1, 1, x.per_sample()};
  const std::string& id = o.node->id;
  o.params(t.weight, wk, ws, id + ".weight");
  if (p.bias) o.params(t.bias, bk, {1, 1, 1, co}, id + ".bias");
  if (o.lars) t.lars_norm = o.plan->alloc_lars_norm(wk, id + ".norms", o.layer);
}

// BatchNorm2d: scale and shift, the running statistics (this step's and the
// next), the equivalent inference parameters and the saved batch moments.
void batch_norm_tensors(const OwnedTensors& o, LayerTensors& t) {
  const int64_t c = o.analysis->inputs[0].c;
  const std::string& id = o.node->id;
  MemoryPlan& plan = *o.plan;
  const int v = o.layer;
  o.params(t.weight, ParamKind::BN_WEIGHT, {1, 1, 1, c}, id + ".weight");
  o.params(t.bias, ParamKind::BN_BIAS, {1, 1, 1, c}, id + ".bias");
  t.prev_mean = plan.alloc_bn_stat(Region::B_PREV_MEAN, c, id + ".running_mean", v);
  t.prev_var = plan.alloc_bn_stat(Region::B_PREV_VAR, c, id + ".running_var", v);
  t.next_mean = plan.alloc_bn_stat(Region::B_NEXT_MEAN, c, id + ".next_mean", v);
  t.next_var = plan.alloc_bn_stat(Region::B_NEXT_VAR, c, id + ".next_var", v);
  t.eq_scale = plan.alloc_bn_stat(Region::B_EQ_SCALE, c, id + ".eq_scale", v);
  t.eq_bias = plan.alloc_bn_stat(Region::B_EQ_BIAS, c, id + ".eq_bias", v);
  t.saved = plan.alloc_bn_saved(c, id + ".saved", v);
}

// LayerNorm: scale and shift (in the normalisation kinds, FP32 at every
// precision) and each position's statistics for the backward.
void layer_norm_tensors(const OwnedTensors& o, LayerTensors& t) {
  const Shape& x = o.analysis->inputs[0];
  const std::string& id = o.node->id;
  o.params(t.weight, ParamKind::BN_WEIGHT, {1, 1, 1, x.c}, id + ".weight");
  o.params(t.bias, ParamKind::BN_BIAS, {1, 1, 1, x.c}, id + ".bias");
  t.saved = o.plan->alloc_layer_norm_saved(x, id + ".saved", o.layer);
}

// PositionEmbedding and ClassToken: a learned tensor (the weights series the
// forward reads, the gradient series the backward writes, as a Linear's).
template <ComputeOp Fwd>
GraphNode learned_forward(const LoweringInputs& in) {
  return compute_node(Fwd, {in.x, in.t->weight_in(in.weights)}, {in.t->out}, in.layer);
}

template <ComputeOp Bwd>
GraphNode learned_backward(const LoweringInputs& in) {
  return compute_node(Bwd, {in.t->grad}, {in.t->weight_in(in.grads), in.dx}, in.layer);
}

// The embedding: one value per position and channel; the token: one per channel.
template <bool PerPosition>
void learned_tensors(const OwnedTensors& o, LayerTensors& t) {
  const Shape& x = o.analysis->inputs[0];
  o.params(t.weight, ParamKind::FC_WEIGHT,
           PerPosition ? Shape{1, x.h, x.w, x.c} : Shape{1, 1, 1, x.c}, o.node->id + ".weight");
}

// TokenPool: the first token, or the mean (global average pooling's ops).
bool first_token(const LoweringInputs& in) {
  return !in.params || in.params->class_token;
}

GraphNode token_pool_forward(const LoweringInputs& in) {
  return compute_node(first_token(in) ? ComputeOp::TOKEN_POOL_FWD : ComputeOp::GAP_FWD, {in.x},
                      {in.t->out}, in.layer);
}

GraphNode token_pool_backward(const LoweringInputs& in) {
  return compute_node(first_token(in) ? ComputeOp::TOKEN_POOL_BWD : ComputeOp::GAP_BWD,
                      {in.t->grad}, {in.dx}, in.layer);
}

// SelfAttention: each token's and head's log-sum-exp for the backward.
void attention_tensors(const OwnedTensors& o, LayerTensors& t) {
  t.saved = o.plan->alloc_attention_saved(o.analysis->output, o.node->params.heads,
                                          o.node->id + ".lse", o.layer);
}

// Dropout: the mask its backward reads.
void dropout_tensors(const OwnedTensors& o, LayerTensors& t) {
  t.mask = o.plan->alloc_mask(o.analysis->output, o.node->id + ".mask", o.layer);
}

constexpr LayerLowering with_tensors(LayerLowering l,
                                     void (*own)(const OwnedTensors&, LayerTensors&)) {
  l.own = own;
  return l;
}

// In LayerType order (model/layer_type.h).
constexpr LayerLowering kLowerings[] = {
    {nullptr, nullptr, true},  // Input
    with_tensors({&weighted_forward<ComputeOp::CONV_FWD>, &weighted_backward<ComputeOp::CONV_BWD>},
                 &weighted_tensors<true>),
    with_tensors({&batch_norm_forward, &batch_norm_backward}, &batch_norm_tensors),
    {&unary_forward<ComputeOp::RELU_FWD>, &relu_backward},
    activation<Activation::TANH>(),
    activation<Activation::SILU>(),
    activation<Activation::RELU6>(),
    activation<Activation::LEAKY_RELU>(),
    activation<Activation::GELU>(),
    activation<Activation::SIGMOID>(),
    {&maxpool_forward, &maxpool_backward, true},  // reads its output unless it keeps `where`
    {&unary_forward<ComputeOp::AVGPOOL_FWD>, &grad_only_backward<ComputeOp::AVGPOOL_BWD>},
    {&unary_forward<ComputeOp::GAP_FWD>, &grad_only_backward<ComputeOp::GAP_BWD>},
    with_tensors({&dropout_forward, &dropout_backward}, &dropout_tensors),
    {&unary_forward<ComputeOp::FLATTEN_FWD>, &grad_only_backward<ComputeOp::FLATTEN_BWD>},
    with_tensors(
        {&weighted_forward<ComputeOp::LINEAR_FWD>, &weighted_backward<ComputeOp::LINEAR_BWD>},
        &weighted_tensors<false>),
    {&add_forward, &add_backward},
    {&concat_forward, &concat_backward},
    with_tensors({&layer_norm_forward, &layer_norm_backward}, &layer_norm_tensors),
    {},  // MultiHeadSelfAttention: its parts stand in its place (model/composite_layers.h)
    // TokenLinear: a 1x1 convolution, whose kernels take the token map as it lies.
    with_tensors({&weighted_forward<ComputeOp::CONV_FWD>, &weighted_backward<ComputeOp::CONV_BWD>},
                 &weighted_tensors<true>),
    with_tensors({&attention_forward, &attention_backward, true}, &attention_tensors),
    with_tensors(
        {&learned_forward<ComputeOp::POS_EMBED_FWD>, &learned_backward<ComputeOp::POS_EMBED_BWD>},
        &learned_tensors<true>),
    with_tensors({&learned_forward<ComputeOp::CLASS_TOKEN_FWD>,
                  &learned_backward<ComputeOp::CLASS_TOKEN_BWD>},
                 &learned_tensors<false>),
    {&token_pool_forward, &token_pool_backward},
    {&loss_forward, nullptr, true},  // SoftmaxCrossEntropy: its forward writes the logits' gradient
};
static_assert(std::size(kLowerings) == std::size(kAllLayerTypes),
              "every LayerType needs its lowering, in enum order");

}  // namespace

const LayerLowering& layer_lowering(LayerType t) noexcept {
  return kLowerings[static_cast<size_t>(t)];
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The operations graph nodes name: ComputeOp (one layer's kernel on DTensor
// ids) and RangeOp (one launch over a whole span of regions), and one table
// row per op with what the compiler and the runtime need to know of it (its
// name, its stream, whether it may work in place or forks). An op is added
// here (enum and row), in each backend's kernel table and in engine.backend_ops.
#pragma once

#include <cstdint>
#include <string_view>

#include <renaissance/stream_kind.h>

namespace tr {

enum class ComputeOp : uint8_t {
  H2D_INPUT,    // host batch -> input buffer and labels (TRANS)
  COPY_LABELS,  // labels of the buffer in use -> the active label tensor
  CONV_FWD,
  CONV_BWD,        // forks: dW on COMP_1, dB on COMP_2, dX on COMP_3 after dW read X
  CONV_BWD_FIRST,  // first layer: weight (and bias) gradient only
  LINEAR_FWD,
  LINEAR_BWD,  // forks like CONV_BWD
  LINEAR_BWD_FIRST,
  BN_FWD_TRAIN,
  BN_FWD_INFER,  // uses the equivalent scale/bias
  BN_BWD,
  // BN followed by its only consumer, a ReLU, in one pass: the BN output is
  // never stored, and the backward recomputes the ReLU mask from the BN input
  // (so the ReLU output may be overwritten by the next layer's in-place dX).
  BN_RELU_FWD_TRAIN,
  BN_RELU_FWD_INFER,
  BN_RELU_BWD,
  // Layer normalisation over each position's channels (a token's features),
  // each row with its own statistics: y = (x - mean) / std * gamma + beta.
  LAYER_NORM_FWD,  // in [x, gamma, beta] out [y, saved: each row's mean and 1/std]
  LAYER_NORM_BWD,  // in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
  // Scaled dot-product attention over the positions of a feature map (its
  // tokens), each head on its slice of the channels, with an online softmax:
  // the T x T scores are never stored. qkv holds each token's queries, keys
  // and values side by side ([N,H,W,3C]); lse each token's and head's
  // log-sum-exp of its scores ([N,H,W,heads]), all the backward needs of
  // the softmax.
  ATTENTION_FWD,  // in [qkv] out [o, lse] (training: the layer's dropout applies) or [o]
  ATTENTION_BWD,  // in [qkv, o, lse, do] out [dqkv]
  // The token ops of a vision transformer, on [N,H,W,C] token maps.
  POS_EMBED_FWD,    // in [x, e [1,H,W,C]] out [x + e]
  POS_EMBED_BWD,    // in [dy] out [de (the sum over the batch), dx]
  CLASS_TOKEN_FWD,  // in [x, token [1,1,1,C]] out [y [N,1,1+H*W,C]: the token, then x's positions]
  CLASS_TOKEN_BWD,  // in [dy] out [dtoken (the sum over the batch), dx]
  TOKEN_POOL_FWD,   // in [x] out [y [N,1,1,C]: each sample's first token]
  TOKEN_POOL_BWD,   // in [dy] out [dx: dy at the first token, 0 elsewhere]
  RELU_FWD,
  RELU_BWD,
  // Every elementwise activation but ReLU (which fuses with BN and takes
  // in-place gradients), one op with its sub-kind in NodeParams::activation.
  ACTIVATION_FWD,
  ACTIVATION_BWD,  // reads the output or the input: activation_backward_reads_output
  MAXPOOL_FWD,
  MAXPOOL_BWD,  // in [x, y, dy] out [dx]
  // Training's max pooling that keeps where each maximum was instead of its
  // input: in [x] out [y, where (INT8: the first maximum's position in its
  // window, row-major over the whole kernel; -1 where the maximum is NaN)].
  MAXPOOL_FWD_WHERE,
  MAXPOOL_BWD_WHERE,  // in [where, dy] out [dx]: MAXPOOL_BWD's routing, bit for bit
  AVGPOOL_FWD,
  AVGPOOL_BWD,
  GAP_FWD,
  GAP_BWD,
  DROPOUT_FWD,
  DROPOUT_BWD,
  IDENTITY,  // dropout at inference
  FLATTEN_FWD,
  FLATTEN_BWD,
  ADD_FWD,
  ADD_BWD,
  // An add followed by its only consumer, a ReLU (a residual join), in one
  // pass: the sum is never stored. The backward takes its mask from the
  // output, as an unfused ReLU's, and writes both inputs' gradients.
  ADD_RELU_FWD,  // in [x0, x1] out [relu(x0 + x1)], the sum rounded to storage first
  // in [dy, y] out [dx0, dx1]: each (+)= dy where y > 0. dx0 may take dy's
  // bytes (the gradient's chain, which packs tighter than y's from the forward).
  ADD_RELU_BWD,
  CONCAT_FWD,          // [x0, x1, ...] -> y, channels in port order
  CONCAT_BWD,          // dy -> [dx0, dx1, ...], each its channel slice
  SOFTMAX_CE_FWD_BWD,  // loss, top-1, top-5 into R_RESULT and the logits' gradient
  SOFTMAX_CE_FWD,      // evaluation: loss and top-1/top-5 only
  LOSS_SCALE_UPDATE,   // AMP: halve on overflow, grow after clean steps
  ADAM_BIAS_CORRECTION,
  COUNT_UPDATE,  // UPDATES += 1 unless the step overflowed
  NUM_COMPUTE_OPS
};

enum class RangeOp : uint8_t {
  CLEAR,
  CAST_FP32_TO_FP16,
  CAST_FP16_TO_FP32,
  CAST_FP32_TO_BF16,
  CAST_BF16_TO_FP32,
  SCALE,      // multiply by a scalar from S_SCALARS (AMP unscaling)
  NAN_CHECK,  // sets the overflow flag in S_SCALARS
  ALLREDUCE_MEAN,
  ALLREDUCE_SUM,
  ALLGATHER,  // each rank's share (core/data_shard.h) of the span to every rank
  // The elementwise maximum over the ranks (the overflow flag under ZeRO-2:
  // every other scalar is the same on every rank).
  ALLREDUCE_MAX,
  // The mean over the ranks of the in span, of which each rank keeps its
  // share (core/data_shard.h) at the start of its out span (ZeRO-2).
  REDUCE_SCATTER,
  // Sequence parallel over the tensor ranks (DTensor in -> DTensor out):
  // every rank of the group gets the group's batch of a feature, each
  // rank's samples in rank order (before a column-parallel layer) ...
  ALLGATHER_BATCH,
  // ... and the sum over the group of a feature of the group's batch, each
  // rank keeping its own samples of it (after a row-parallel layer).
  REDUCE_SCATTER_BATCH,
  COPY,
  ACCUMULATE,    // out += in
  BN_EQ_PARAMS,  // running stats + BN weights -> equivalent scale/bias
  SGD_UPDATE,
  ADAM_UPDATE,
  // [|w|, |g|] per layer; a data-sharded one (ZeRO-2) writes the squared
  // sums of this rank's share instead, which LARS_NORM_SUM adds and roots.
  LARS_NORMS,
  LARS_UPDATE,
  EMA_UPDATE,
  SQRT,  // in place, each float its square root (ZeRO-2's LARS norms from summed squares)
  NUM_RANGE_OPS
};

// The sub-kinds of ACTIVATION_FWD/BWD. Plain values both backends' kernels
// switch over (the CUDA kernels include this header).
enum class Activation : uint8_t {
  TANH,        // tanh(x)
  SILU,        // x * sigmoid(x)
  RELU6,       // min(max(x, 0), 6)
  LEAKY_RELU,  // x > 0 ? x : slope * x  (0 <= slope < 1)
  GELU,        // x * Phi(x), Phi the standard normal CDF (erf form, as PyTorch's default)
  SIGMOID,     // 1 / (1 + exp(-x))
  NUM_ACTIVATIONS
};

// The backward's first input: the output y (tanh, ReLU6, LeakyReLU, sigmoid:
// the derivative is a function of y) or the input x (SiLU, GELU).
constexpr bool activation_backward_reads_output(Activation a) noexcept {
  return a == Activation::TANH || a == Activation::RELU6 || a == Activation::LEAKY_RELU ||
         a == Activation::SIGMOID;
}

// Parts of a forked backward op.
enum class BwdPart : uint8_t { DW, DB, DX };

// How an op takes feature maps whose channels lie in blocks
// (DTensor::channel_block): not at all; element by element, every feature
// operand in one layout (the order of elements is the same in each); per
// channel over windows of H and W, so a blocked map is N * C / b maps of b
// channels in the plain layout; or natively, the kernel reading the layout.
enum class ChannelBlocks : uint8_t { None, Elementwise, PerChannelWindows, Native };

struct ComputeOpInfo {
  ComputeOp op = ComputeOp::NUM_COMPUTE_OPS;
  std::string_view name;
  // The stream it runs on (ENGINE.md §4); a forked op's parts run on three,
  // and this one is the stream downstream work waits for.
  StreamKind stream = StreamKind::UPDATE;
  bool in_place = false;  // its output may take its first input's bytes
  bool forks = false;     // a backward in parts: dW, (dB,) dX (see fork_parts)
  // Batch-norm training: with SyncBatchNorm its statistics (and its
  // backward's sums) are summed across ranks inside the op.
  bool bn_training = false;
  ChannelBlocks channel_blocks = ChannelBlocks::None;
};

struct RangeOpInfo {
  RangeOp op = RangeOp::NUM_RANGE_OPS;
  std::string_view name;
  StreamKind stream = StreamKind::UPDATE;
  bool collective = false;  // runs through the collectives, not through a kernel
  // LARS: each of its three region groups on its own compute stream, by the
  // node's first span (stream_for(const GraphNode&)).
  bool stream_by_group = false;
};

// The op's row; an op out of range gets a row named "?" on UPDATE.
const ComputeOpInfo& compute_op_info(ComputeOp op) noexcept;
const RangeOpInfo& range_op_info(RangeOp op) noexcept;

std::string_view compute_op_name(ComputeOp op) noexcept;
std::string_view range_op_name(RangeOp op) noexcept;
std::string_view bwd_part_name(BwdPart part) noexcept;
// Communication ops run through the collectives, not through kernels.
bool is_collective(RangeOp op) noexcept;
// The batch-norm training ops: with SyncBatchNorm their statistics (and
// their backward's sums) are summed across ranks inside the op.
bool is_bn_training(ComputeOp op) noexcept;

}  // namespace tr

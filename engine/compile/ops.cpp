// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/ops.h"

#include <iterator>

namespace tr {

namespace {

using S = StreamKind;

constexpr ComputeOpInfo compute(ComputeOp op, std::string_view name, StreamKind stream) {
  return {op, name, stream};
}
constexpr ComputeOpInfo in_place(ComputeOpInfo i) {
  i.in_place = true;
  return i;
}
constexpr ComputeOpInfo forks(ComputeOpInfo i) {
  i.forks = true;
  return i;
}
constexpr ComputeOpInfo bn_training(ComputeOpInfo i) {
  i.bn_training = true;
  return i;
}
constexpr ComputeOpInfo blocks(ChannelBlocks how, ComputeOpInfo i) {
  i.channel_blocks = how;
  return i;
}
constexpr ChannelBlocks kElementwise = ChannelBlocks::Elementwise;
constexpr ChannelBlocks kWindows = ChannelBlocks::PerChannelWindows;
constexpr ChannelBlocks kNative = ChannelBlocks::Native;

// In ComputeOp order. The streams: the input copy on TRANS; convolutions,
// linear layers, the loss and the cheap copies on COMP_1; normalisation,
// pooling and dropout on COMP_2; activations and the forked backwards
// (their representative part, dX) on COMP_3; scalar bookkeeping on UPDATE.
constexpr ComputeOpInfo kComputeOps[] = {
    compute(ComputeOp::H2D_INPUT, "H2D_INPUT", S::TRANS),
    compute(ComputeOp::COPY_LABELS, "COPY_LABELS", S::COMP_1),
    blocks(kNative, compute(ComputeOp::CONV_FWD, "CONV_FWD", S::COMP_1)),
    blocks(kNative, forks(compute(ComputeOp::CONV_BWD, "CONV_BWD", S::COMP_3))),
    blocks(kNative, compute(ComputeOp::CONV_BWD_FIRST, "CONV_BWD_FIRST", S::COMP_1)),
    compute(ComputeOp::LINEAR_FWD, "LINEAR_FWD", S::COMP_1),
    forks(compute(ComputeOp::LINEAR_BWD, "LINEAR_BWD", S::COMP_3)),
    compute(ComputeOp::LINEAR_BWD_FIRST, "LINEAR_BWD_FIRST", S::COMP_1),
    blocks(kNative, bn_training(compute(ComputeOp::BN_FWD_TRAIN, "BN_FWD_TRAIN", S::COMP_2))),
    blocks(kNative, in_place(compute(ComputeOp::BN_FWD_INFER, "BN_FWD_INFER", S::COMP_2))),
    blocks(kNative, bn_training(compute(ComputeOp::BN_BWD, "BN_BWD", S::COMP_2))),
    blocks(kNative,
           bn_training(compute(ComputeOp::BN_RELU_FWD_TRAIN, "BN_RELU_FWD_TRAIN", S::COMP_2))),
    blocks(kNative,
           in_place(compute(ComputeOp::BN_RELU_FWD_INFER, "BN_RELU_FWD_INFER", S::COMP_2))),
    blocks(kNative, bn_training(compute(ComputeOp::BN_RELU_BWD, "BN_RELU_BWD", S::COMP_2))),
    compute(ComputeOp::LAYER_NORM_FWD, "LAYER_NORM_FWD", S::COMP_2),
    compute(ComputeOp::LAYER_NORM_BWD, "LAYER_NORM_BWD", S::COMP_2),
    compute(ComputeOp::ATTENTION_FWD, "ATTENTION_FWD", S::COMP_1),
    compute(ComputeOp::ATTENTION_BWD, "ATTENTION_BWD", S::COMP_1),
    compute(ComputeOp::POS_EMBED_FWD, "POS_EMBED_FWD", S::COMP_1),
    compute(ComputeOp::POS_EMBED_BWD, "POS_EMBED_BWD", S::COMP_1),
    compute(ComputeOp::CLASS_TOKEN_FWD, "CLASS_TOKEN_FWD", S::COMP_1),
    compute(ComputeOp::CLASS_TOKEN_BWD, "CLASS_TOKEN_BWD", S::COMP_1),
    compute(ComputeOp::TOKEN_POOL_FWD, "TOKEN_POOL_FWD", S::COMP_1),
    compute(ComputeOp::TOKEN_POOL_BWD, "TOKEN_POOL_BWD", S::COMP_1),
    blocks(kElementwise, in_place(compute(ComputeOp::RELU_FWD, "RELU_FWD", S::COMP_3))),
    blocks(kElementwise, compute(ComputeOp::RELU_BWD, "RELU_BWD", S::COMP_3)),
    compute(ComputeOp::ACTIVATION_FWD, "ACTIVATION_FWD", S::COMP_3),
    compute(ComputeOp::ACTIVATION_BWD, "ACTIVATION_BWD", S::COMP_3),
    blocks(kWindows, compute(ComputeOp::MAXPOOL_FWD, "MAXPOOL_FWD", S::COMP_2)),
    blocks(kWindows, compute(ComputeOp::MAXPOOL_BWD, "MAXPOOL_BWD", S::COMP_2)),
    blocks(kNative, compute(ComputeOp::MAXPOOL_FWD_WHERE, "MAXPOOL_FWD_WHERE", S::COMP_2)),
    blocks(kNative, compute(ComputeOp::MAXPOOL_BWD_WHERE, "MAXPOOL_BWD_WHERE", S::COMP_2)),
    blocks(kWindows, compute(ComputeOp::AVGPOOL_FWD, "AVGPOOL_FWD", S::COMP_2)),
    blocks(kWindows, compute(ComputeOp::AVGPOOL_BWD, "AVGPOOL_BWD", S::COMP_2)),
    blocks(kWindows, compute(ComputeOp::GAP_FWD, "GAP_FWD", S::COMP_2)),
    blocks(kWindows, compute(ComputeOp::GAP_BWD, "GAP_BWD", S::COMP_2)),
    compute(ComputeOp::DROPOUT_FWD, "DROPOUT_FWD", S::COMP_2),
    compute(ComputeOp::DROPOUT_BWD, "DROPOUT_BWD", S::COMP_2),
    compute(ComputeOp::IDENTITY, "IDENTITY", S::COMP_1),
    compute(ComputeOp::FLATTEN_FWD, "FLATTEN_FWD", S::COMP_1),
    compute(ComputeOp::FLATTEN_BWD, "FLATTEN_BWD", S::COMP_1),
    blocks(kElementwise, in_place(compute(ComputeOp::ADD_FWD, "ADD_FWD", S::COMP_1))),
    blocks(kElementwise, compute(ComputeOp::ADD_BWD, "ADD_BWD", S::COMP_1)),
    blocks(kElementwise, in_place(compute(ComputeOp::ADD_RELU_FWD, "ADD_RELU_FWD", S::COMP_1))),
    blocks(kElementwise, in_place(compute(ComputeOp::ADD_RELU_BWD, "ADD_RELU_BWD", S::COMP_1))),
    compute(ComputeOp::CONCAT_FWD, "CONCAT_FWD", S::COMP_1),
    compute(ComputeOp::CONCAT_BWD, "CONCAT_BWD", S::COMP_1),
    compute(ComputeOp::SOFTMAX_CE_FWD_BWD, "SOFTMAX_CE_FWD_BWD", S::COMP_1),
    compute(ComputeOp::SOFTMAX_CE_FWD, "SOFTMAX_CE_FWD", S::COMP_1),
    compute(ComputeOp::LOSS_SCALE_UPDATE, "LOSS_SCALE_UPDATE", S::UPDATE),
    compute(ComputeOp::ADAM_BIAS_CORRECTION, "ADAM_BIAS_CORRECTION", S::UPDATE),
    compute(ComputeOp::COUNT_UPDATE, "COUNT_UPDATE", S::UPDATE),
};

constexpr RangeOpInfo range(RangeOp op, std::string_view name, StreamKind stream = S::UPDATE) {
  return {op, name, stream};
}
constexpr RangeOpInfo collective(RangeOpInfo i) {
  i.collective = true;
  return i;
}
constexpr RangeOpInfo by_group(RangeOpInfo i) {
  i.stream_by_group = true;
  return i;
}

// In RangeOp order: on UPDATE but for the NaN check (COMP_1, ahead of the
// update) and LARS (per region group).
constexpr RangeOpInfo kRangeOps[] = {
    range(RangeOp::CLEAR, "CLEAR"),
    range(RangeOp::CAST_FP32_TO_FP16, "CAST_FP32_TO_FP16"),
    range(RangeOp::CAST_FP16_TO_FP32, "CAST_FP16_TO_FP32"),
    range(RangeOp::CAST_FP32_TO_BF16, "CAST_FP32_TO_BF16"),
    range(RangeOp::CAST_BF16_TO_FP32, "CAST_BF16_TO_FP32"),
    range(RangeOp::SCALE, "SCALE"),
    range(RangeOp::NAN_CHECK, "NAN_CHECK", S::COMP_1),
    collective(range(RangeOp::ALLREDUCE_MEAN, "ALLREDUCE_MEAN")),
    collective(range(RangeOp::ALLREDUCE_SUM, "ALLREDUCE_SUM")),
    collective(range(RangeOp::ALLGATHER, "ALLGATHER")),
    collective(range(RangeOp::ALLREDUCE_MAX, "ALLREDUCE_MAX")),
    collective(range(RangeOp::REDUCE_SCATTER, "REDUCE_SCATTER")),
    collective(range(RangeOp::ALLGATHER_BATCH, "ALLGATHER_BATCH")),
    collective(range(RangeOp::REDUCE_SCATTER_BATCH, "REDUCE_SCATTER_BATCH")),
    range(RangeOp::COPY, "COPY"),
    range(RangeOp::ACCUMULATE, "ACCUMULATE"),
    range(RangeOp::BN_EQ_PARAMS, "BN_EQ_PARAMS"),
    range(RangeOp::SGD_UPDATE, "SGD_UPDATE"),
    range(RangeOp::ADAM_UPDATE, "ADAM_UPDATE"),
    by_group(range(RangeOp::LARS_NORMS, "LARS_NORMS")),
    by_group(range(RangeOp::LARS_UPDATE, "LARS_UPDATE")),
    range(RangeOp::EMA_UPDATE, "EMA_UPDATE"),
    range(RangeOp::SQRT, "SQRT"),
};

template <class Info, size_t N>
constexpr bool in_enum_order(const Info (&rows)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (static_cast<size_t>(rows[i].op) != i) return false;
  return true;
}

static_assert(std::size(kComputeOps) == static_cast<size_t>(ComputeOp::NUM_COMPUTE_OPS),
              "every ComputeOp needs its row in kComputeOps");
static_assert(in_enum_order(kComputeOps), "kComputeOps lists the ops in their enum order");
static_assert(std::size(kRangeOps) == static_cast<size_t>(RangeOp::NUM_RANGE_OPS),
              "every RangeOp needs its row in kRangeOps");
static_assert(in_enum_order(kRangeOps), "kRangeOps lists the ops in their enum order");

constexpr ComputeOpInfo kNoComputeOp{ComputeOp::NUM_COMPUTE_OPS, "?", S::UPDATE};
constexpr RangeOpInfo kNoRangeOp{RangeOp::NUM_RANGE_OPS, "?", S::UPDATE};

}  // namespace

const ComputeOpInfo& compute_op_info(ComputeOp op) noexcept {
  const auto i = static_cast<size_t>(op);
  return i < std::size(kComputeOps) ? kComputeOps[i] : kNoComputeOp;
}

const RangeOpInfo& range_op_info(RangeOp op) noexcept {
  const auto i = static_cast<size_t>(op);
  return i < std::size(kRangeOps) ? kRangeOps[i] : kNoRangeOp;
}

std::string_view compute_op_name(ComputeOp op) noexcept {
  return compute_op_info(op).name;
}

std::string_view range_op_name(RangeOp op) noexcept {
  return range_op_info(op).name;
}

std::string_view bwd_part_name(BwdPart part) noexcept {
  switch (part) {
    case BwdPart::DW:
      return "dW";
    case BwdPart::DB:
      return "dB";
    case BwdPart::DX:
      return "dX";
  }
  return "?";
}

bool is_collective(RangeOp op) noexcept {
  return range_op_info(op).collective;
}

bool is_bn_training(ComputeOp op) noexcept {
  return compute_op_info(op).bn_training;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/ops.h"

#include <array>

namespace tr {

std::string_view compute_op_name(ComputeOp op) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(ComputeOp::NUM_COMPUTE_OPS)>
      kNames = {"H2D_INPUT",
                "COPY_LABELS",
                "CONV_FWD",
                "CONV_BWD",
                "CONV_BWD_FIRST",
                "LINEAR_FWD",
                "LINEAR_BWD",
                "LINEAR_BWD_FIRST",
                "BN_FWD_TRAIN",
                "BN_FWD_INFER",
                "BN_BWD",
                "BN_RELU_FWD_TRAIN",
                "BN_RELU_FWD_INFER",
                "BN_RELU_BWD",
                "RELU_FWD",
                "RELU_BWD",
                "ACTIVATION_FWD",
                "ACTIVATION_BWD",
                "MAXPOOL_FWD",
                "MAXPOOL_BWD",
                "AVGPOOL_FWD",
                "AVGPOOL_BWD",
                "GAP_FWD",
                "GAP_BWD",
                "DROPOUT_FWD",
                "DROPOUT_BWD",
                "IDENTITY",
                "FLATTEN_FWD",
                "FLATTEN_BWD",
                "ADD_FWD",
                "ADD_BWD",
                "CONCAT_FWD",
                "CONCAT_BWD",
                "SOFTMAX_CE_FWD_BWD",
                "SOFTMAX_CE_FWD",
                "LOSS_SCALE_UPDATE",
                "ADAM_BIAS_CORRECTION",
                "COUNT_UPDATE"};
  const auto i = static_cast<size_t>(op);
  return i < kNames.size() ? kNames[i] : "?";
}

std::string_view range_op_name(RangeOp op) noexcept {
  static constexpr std::array<std::string_view, static_cast<size_t>(RangeOp::NUM_RANGE_OPS)>
      kNames = {"CLEAR",      "CAST_FP32_TO_FP16", "CAST_FP16_TO_FP32", "SCALE",
                "NAN_CHECK",  "ALLREDUCE_MEAN",    "ALLREDUCE_SUM",     "COPY",
                "ACCUMULATE", "BN_EQ_PARAMS",      "SGD_UPDATE",        "ADAM_UPDATE",
                "LARS_NORMS", "LARS_UPDATE",       "EMA_UPDATE"};
  const auto i = static_cast<size_t>(op);
  return i < kNames.size() ? kNames[i] : "?";
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
  return op == RangeOp::ALLREDUCE_MEAN || op == RangeOp::ALLREDUCE_SUM;
}

bool is_bn_training(ComputeOp op) noexcept {
  return op == ComputeOp::BN_FWD_TRAIN || op == ComputeOp::BN_RELU_FWD_TRAIN ||
         op == ComputeOp::BN_BWD || op == ComputeOp::BN_RELU_BWD;
}

}  // namespace tr

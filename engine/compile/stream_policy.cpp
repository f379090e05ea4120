// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/stream_policy.h"

namespace tr {

namespace {

StreamKind compute_stream(ComputeOp op) noexcept {
  switch (op) {
    case ComputeOp::H2D_INPUT:
      return StreamKind::TRANS;
    case ComputeOp::CONV_FWD:
    case ComputeOp::LINEAR_FWD:
    case ComputeOp::SOFTMAX_CE_FWD_BWD:
    case ComputeOp::SOFTMAX_CE_FWD:
    case ComputeOp::CONV_BWD_FIRST:
    case ComputeOp::LINEAR_BWD_FIRST:
    case ComputeOp::COPY_LABELS:
    case ComputeOp::FLATTEN_FWD:
    case ComputeOp::FLATTEN_BWD:
    case ComputeOp::ADD_FWD:
    case ComputeOp::ADD_BWD:
    case ComputeOp::CONCAT_FWD:
    case ComputeOp::CONCAT_BWD:
    case ComputeOp::IDENTITY:
      return StreamKind::COMP_1;
    case ComputeOp::BN_FWD_TRAIN:
    case ComputeOp::BN_FWD_INFER:
    case ComputeOp::BN_BWD:
    case ComputeOp::BN_RELU_FWD_TRAIN:
    case ComputeOp::BN_RELU_FWD_INFER:
    case ComputeOp::BN_RELU_BWD:
    case ComputeOp::MAXPOOL_FWD:
    case ComputeOp::MAXPOOL_BWD:
    case ComputeOp::AVGPOOL_FWD:
    case ComputeOp::AVGPOOL_BWD:
    case ComputeOp::GAP_FWD:
    case ComputeOp::GAP_BWD:
    case ComputeOp::DROPOUT_FWD:
    case ComputeOp::DROPOUT_BWD:
      return StreamKind::COMP_2;
    case ComputeOp::RELU_FWD:
    case ComputeOp::RELU_BWD:
    case ComputeOp::ACTIVATION_FWD:
    case ComputeOp::ACTIVATION_BWD:
    case ComputeOp::CONV_BWD:
    case ComputeOp::LINEAR_BWD:
      return StreamKind::COMP_3;
    case ComputeOp::LOSS_SCALE_UPDATE:
    case ComputeOp::ADAM_BIAS_CORRECTION:
    case ComputeOp::COUNT_UPDATE:
    case ComputeOp::NUM_COMPUTE_OPS:
      return StreamKind::UPDATE;
  }
  return StreamKind::COMP_1;
}

StreamKind range_stream(const GraphNode& node) noexcept {
  switch (node.range_op) {
    case RangeOp::NAN_CHECK:
      return StreamKind::COMP_1;
    case RangeOp::LARS_NORMS:
    case RangeOp::LARS_UPDATE: {
      // LARS spreads its three region groups over the compute streams.
      const Region r = node.in_spans.empty() ? Region::W_DEEP_CONV : node.in_spans.front().first;
      if (r == Region::W_FC_BIAS || r == Region::W_FC_WEIGHT) return StreamKind::COMP_1;
      if (r == Region::W_FIRST_CONV) return StreamKind::COMP_2;
      return StreamKind::COMP_3;
    }
    default:
      return StreamKind::UPDATE;
  }
}

}  // namespace

StreamKind stream_for(const GraphNode& node) noexcept {
  return node.kind == NodeKind::RANGE ? range_stream(node) : compute_stream(node.op);
}

StreamKind stream_for(GraphId graph) noexcept {
  switch (graph) {
    case GraphId::TRANSFER_A:
    case GraphId::TRANSFER_B:
      return StreamKind::TRANS;
    case GraphId::FIRST_LAYER_FWD_A:
    case GraphId::FIRST_LAYER_FWD_B:
    case GraphId::DEEP_FWD_BWD:
    case GraphId::FIRST_LAYER_BWD_A:
    case GraphId::FIRST_LAYER_BWD_B:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
    case GraphId::LARS_FC_OPT:
      return StreamKind::COMP_1;
    case GraphId::LARS_FIRST_CONV_OPT:
      return StreamKind::COMP_2;
    case GraphId::LARS_DEEP_CONV_OPT:
      return StreamKind::COMP_3;
    default:
      return StreamKind::UPDATE;
  }
}

std::vector<ForkPart> fork_parts(ComputeOp op, bool has_bias) {
  if (op != ComputeOp::CONV_BWD && op != ComputeOp::LINEAR_BWD) return {};
  std::vector<ForkPart> parts{{BwdPart::DW, StreamKind::COMP_1, -1}};
  if (has_bias) parts.push_back({BwdPart::DB, StreamKind::COMP_2, -1});
  parts.push_back({BwdPart::DX, StreamKind::COMP_3, 0});
  return parts;
}

}  // namespace tr

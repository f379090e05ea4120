// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/stream_policy.h"

namespace tr {

namespace {

StreamKind range_stream(const GraphNode& node) noexcept {
  const RangeOpInfo& info = range_op_info(node.range_op);
  if (!info.stream_by_group) return info.stream;
  // LARS spreads its three region groups over the compute streams.
  const Region r = node.in_spans.empty() ? Region::W_DEEP_CONV : node.in_spans.front().first;
  if (r == Region::W_FC_BIAS || r == Region::W_FC_WEIGHT) return StreamKind::COMP_1;
  if (r == Region::W_FIRST_CONV) return StreamKind::COMP_2;
  return StreamKind::COMP_3;
}

}  // namespace

StreamKind stream_for(const GraphNode& node) noexcept {
  return node.kind == NodeKind::RANGE ? range_stream(node) : compute_op_info(node.op).stream;
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
  if (!compute_op_info(op).forks) return {};
  std::vector<ForkPart> parts{{BwdPart::DW, StreamKind::COMP_1, -1}};
  if (has_bias) parts.push_back({BwdPart::DB, StreamKind::COMP_2, -1});
  parts.push_back({BwdPart::DX, StreamKind::COMP_3, 0});
  return parts;
}

}  // namespace tr

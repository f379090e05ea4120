// SPDX-License-Identifier: GPL-3.0-or-later
// The kind of a profiled span, from its graph and op, and the legend's colours.
#include "timeline/bar_kind.h"

#include <QCoreApplication>

namespace tr::gui {

QString bar_kind_name(BarKind kind) {
  switch (kind) {
    case BarKind::Transfer:
      return QCoreApplication::translate("BarKind", "transfer");
    case BarKind::Forward:
      return QCoreApplication::translate("BarKind", "forward");
    case BarKind::Backward:
      return QCoreApplication::translate("BarKind", "backward");
    case BarKind::Communication:
      return QCoreApplication::translate("BarKind", "communication");
    case BarKind::Update:
      return QCoreApplication::translate("BarKind", "update");
    case BarKind::Validation:
      return QCoreApplication::translate("BarKind", "validation");
    case BarKind::Other:
      break;
  }
  return QCoreApplication::translate("BarKind", "other");
}

QColor bar_kind_color(BarKind kind) {
  // Distinct in hue and lightness, so neighbouring kinds stay apart for
  // colour-blind users too.
  switch (kind) {
    case BarKind::Transfer:
      return QColor(0x8e, 0x7c, 0xc3);
    case BarKind::Forward:
      return QColor(0x3f, 0x88, 0xd6);
    case BarKind::Backward:
      return QColor(0xe8, 0x8a, 0x3c);
    case BarKind::Communication:
      return QColor(0xd0, 0x3f, 0x4a);
    case BarKind::Update:
      return QColor(0x4c, 0xa8, 0x50);
    case BarKind::Validation:
      return QColor(0x1f, 0xa5, 0xa0);
    case BarKind::Other:
      break;
  }
  return QColor(0x9a, 0x9a, 0x9a);
}

BarKind bar_kind_of(GraphId graph, std::string_view op, std::string_view label) {
  // A collective is communication in whichever graph it runs (ZeRO-2 puts
  // one into the NaN check's graph and LARS's norms).
  for (std::string_view c : {"ALLREDUCE", "ALLGATHER", "REDUCE_SCATTER"})
    if (op.substr(0, c.size()) == c) return BarKind::Communication;
  switch (graph) {
    case GraphId::TRANSFER_A:
    case GraphId::TRANSFER_B:
      return BarKind::Transfer;
    case GraphId::FIRST_LAYER_FWD_A:
    case GraphId::FIRST_LAYER_FWD_B:
      return BarKind::Forward;
    case GraphId::DEEP_FWD_BWD:
      // One graph runs both directions; the loss (SOFTMAX_CE_FWD_BWD) starts
      // the backward pass.
      return op.find("BWD") != std::string_view::npos ? BarKind::Backward : BarKind::Forward;
    case GraphId::FIRST_LAYER_BWD_A:
    case GraphId::FIRST_LAYER_BWD_B:
      return BarKind::Backward;
    case GraphId::DEEP_COMM:
    case GraphId::FIRST_COMM:
    case GraphId::STATS_COMM:
    case GraphId::VAL_RESULT_COMM:
    case GraphId::WEIGHT_GATHER:
      return BarKind::Communication;
    case GraphId::NAN_CHECK_AND_GRAD_SCALING:
    case GraphId::UPDATE_STATS:
    case GraphId::OPTIMIZER:
    case GraphId::LARS_NORM_SUM:
    case GraphId::LARS_FC_OPT:
    case GraphId::LARS_FIRST_CONV_OPT:
    case GraphId::LARS_DEEP_CONV_OPT:
    case GraphId::EMA_UPDATE:
    case GraphId::CAST_MAIN_FP32_TO_FP16:
    case GraphId::CAST_MAIN_FP32_TO_BF16:
      return BarKind::Update;
    case GraphId::UPDATE_BN_INF_PARAMS:
    case GraphId::INF_MAIN_A:
    case GraphId::INF_MAIN_B:
      return BarKind::Validation;
    case GraphId::ZERO_GRAD:
    case GraphId::CAST_DEEP_GRAD_FP16_TO_FP32:
    case GraphId::CAST_DEEP_GRAD_BF16_TO_FP32:
    case GraphId::CAST_FIRST_GRAD_FP16_TO_FP32:
    case GraphId::CAST_FIRST_GRAD_BF16_TO_FP32:
    case GraphId::METRIC_ACCUMULATE:
    case GraphId::RESET_METRICS:
      return BarKind::Other;
    case GraphId::NUM_GRAPH_IDS:
      break;
  }
  // Outside graphs the session copies scalars, results and weights ("scalars
  // H2D", "result D2H", "load W conv1", "read ...").
  const bool copy = label.find("H2D") != std::string_view::npos ||
                    label.find("D2H") != std::string_view::npos || label.substr(0, 5) == "load " ||
                    label.substr(0, 5) == "read ";
  return copy ? BarKind::Transfer : BarKind::Other;
}

}  // namespace tr::gui

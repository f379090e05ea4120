// SPDX-License-Identifier: GPL-3.0-or-later
// BarKind: what a profiled span did (forward, backward, communication, ...),
// which decides a timeline bar's colour and its entry in the legend.
#pragma once

#include <QColor>
#include <QString>
#include <cstdint>
#include <string_view>

#include <renaissance/graph_id.h>

namespace tr::gui {

enum class BarKind : uint8_t {
  Transfer,
  Forward,
  Backward,
  Communication,
  Update,
  Validation,
  Other,
};
inline constexpr int kNumBarKinds = 7;

QString bar_kind_name(BarKind kind);
QColor bar_kind_color(BarKind kind);

// `op` is the node's op name ("CONV_BWD"); launches outside graphs
// (graph == NUM_GRAPH_IDS) only have their label to go by.
BarKind bar_kind_of(GraphId graph, std::string_view op, std::string_view label);

}  // namespace tr::gui

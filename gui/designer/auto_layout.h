// SPDX-License-Identifier: GPL-3.0-or-later
// Automatic layout of a model graph for the designer: layers by longest path
// from the sources (so data flows top to bottom), nodes within a layer
// ordered by the mean column of their producers (so a residual branch sits
// beside its main path). Used for projects whose file has no positions and
// for the "Arrange" action.
#pragma once

#include <vector>

#include <renaissance/project.h>
#include "project_document.h"

namespace tr::gui {

// The same pitch the ready-made projects use (scripts/gen_projects.py).
inline constexpr double kLayoutColumnPitch = 260;
inline constexpr double kLayoutRowPitch = 90;

// One position per node, in node order.
std::vector<NodePosition> auto_layout(const ModelGraph& g);

}  // namespace tr::gui

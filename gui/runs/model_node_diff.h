// SPDX-License-Identifier: GPL-3.0-or-later
// The model part of a configuration comparison, layer by layer. Layers are
// matched by id across the runs' projects, not by their place in the node
// list (where one inserted layer would shift every later one into a
// "difference"); a layer's inputs stand in for the edges into it, and a
// layer that some runs lack is one line, not one per field.
#pragma once

#include <string>
#include <vector>

namespace tr::gui {

struct LayerDifference {
  // Relative to the first run: Added when it lacks the layer, Removed when
  // it has it and a later run does not, Changed when every run has it.
  enum class Kind { Changed, Removed, Added };
  Kind kind = Kind::Changed;
  std::string id;
  std::string type;  // in the first run that has the layer
  // Per run: the fields that differ ("out_channels 6, kernel 5") for a
  // changed layer, the whole layer ("Conv2d(out_channels 16, kernel 3) <- input")
  // for one not in every run; "-" where the run lacks it.
  std::vector<std::string> values;
  // One line for a tooltip: "conv1: out_channels 6 → 16".
  std::string summary;
};

struct ModelDifferences {
  std::vector<int> layers;  // per run: how many layers its model has (-1: no model)
  // Changed layers first, then removed, then added, each in model order.
  std::vector<LayerDifference> differences;
};

// The projects as the runs trained them (RunDetail::project_json), one per run.
ModelDifferences diff_models(const std::vector<std::string>& project_json);

}  // namespace tr::gui

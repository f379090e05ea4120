// SPDX-License-Identifier: GPL-3.0-or-later
// The differences compare_runs() finds, sorted into the groups a person
// reads them in: Model (layer by layer, see model_node_diff.h), Training,
// Dataset, and Devices and other (devices, precision, versions, variants).
#pragma once

#include <string>
#include <vector>

#include <renaissance/run_compare.h>

namespace tr::gui {

struct ConfigDiffRow {
  std::string key;                  // unique: "training/optimizer/lr", "model/conv1"
  std::string label;                // within its group: "optimizer/lr", "conv1", "+ bn1"
  std::vector<std::string> values;  // one per run
  std::string summary;              // the row in one line: "conv1: out_channels 6 → 16"
};

struct ConfigDiffGroup {
  std::string title;                // "Model"
  std::vector<std::string> values;  // per run, what the group row shows ("14 layers"), or empty
  std::vector<ConfigDiffRow> rows;
};

// Only groups with differences, in the order Model, Training, Dataset, other.
std::vector<ConfigDiffGroup> group_config_differences(const store::RunComparison& comparison);

}  // namespace tr::gui

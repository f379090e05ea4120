// SPDX-License-Identifier: GPL-3.0-or-later
// Sorting configuration differences into groups.
#include "runs/config_diff_groups.h"

#include <array>
#include <utility>

#include "runs/model_node_diff.h"

namespace tr::gui {

namespace {

enum Group { kModel, kTraining, kDataset, kOther, kGroups };

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Where a compare_runs() key belongs, and what it is called there.
Group group_of(const std::string& key, std::string* label) {
  if (key == "training/dataset") {  // what the data was read from
    *label = "source";
    return kDataset;
  }
  if (key == "project/name" || key == "project/format") {
    *label = "project " + key.substr(std::string("project/").size());
    return kOther;
  }
  // Where and how a run ran rather than what it learnt.
  for (const char* k : {"training/devices", "training/precision", "training/cpu_threads"}) {
    if (key == k) {
      *label = key.substr(std::string("training/").size());
      return kOther;
    }
  }
  static const std::pair<const char*, Group> prefixes[] = {{"project/dataset/", kDataset},
                                                           {"training/", kTraining},
                                                           {"project/", kOther},
                                                           {"run/", kOther}};
  for (const auto& [prefix, group] : prefixes) {
    if (starts_with(key, prefix)) {
      *label = key.substr(std::string(prefix).size());
      return group;
    }
  }
  *label = key;
  return kOther;
}

std::string one_line(const std::string& label, const std::vector<std::string>& values) {
  std::string out = label + ": ";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? " → " : "") + values[i];
  return out;
}

std::vector<ConfigDiffRow> model_rows(const ModelDifferences& model) {
  std::vector<ConfigDiffRow> rows;
  for (const LayerDifference& d : model.differences) {
    // + and − as in a text diff, against the first run.
    const char* mark = d.kind == LayerDifference::Kind::Added     ? "+ "
                       : d.kind == LayerDifference::Kind::Removed ? "− "
                                                                  : "";
    // The id alone keeps the name column narrow; the type starts a whole layer's
    // value, and a changed type is one of the differing fields.
    rows.push_back({"model/" + d.id, mark + d.id, d.values, d.summary});
  }
  return rows;
}

}  // namespace

std::vector<ConfigDiffGroup> group_config_differences(const store::RunComparison& comparison) {
  std::array<ConfigDiffGroup, kGroups> groups;
  groups[kModel].title = "Model";
  groups[kTraining].title = "Training";
  groups[kDataset].title = "Dataset";
  groups[kOther].title = "Devices and other";

  std::vector<std::string> projects;
  for (const store::RunDetail& r : comparison.runs) projects.push_back(r.project_json);
  const ModelDifferences model = diff_models(projects);
  groups[kModel].rows = model_rows(model);
  for (const int n : model.layers)
    groups[kModel].values.push_back(n < 0    ? std::string("no model")
                                    : n == 1 ? std::string("1 layer")
                                             : std::to_string(n) + " layers");

  for (const store::ConfigDifference& d : comparison.differences) {
    // Entries by place in the node list; the model rows above match layers by id instead.
    if (starts_with(d.key, "project/model/")) continue;
    std::string label;
    const Group g = group_of(d.key, &label);
    std::string summary = one_line(label, d.values);
    groups[g].rows.push_back({d.key, std::move(label), d.values, std::move(summary)});
  }

  std::vector<ConfigDiffGroup> out;
  for (ConfigDiffGroup& g : groups)
    if (!g.rows.empty()) out.push_back(std::move(g));
  return out;
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// probe_dataset: whether a project's dataset can be loaded, and how many
// samples each split serves, from the file headers alone (no pixels read),
// so an editor can list a missing folder or a batch larger than the data as
// a problem the moment the project opens or a setting changes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/dataset_kinds.h>
#include <renaissance/project.h>

namespace tr {

struct DatasetProbe {
  bool ok = false;
  std::string field;    // the setting to change when not ok ("dataset.path")
  std::string problem;  // what is wrong and what to do, when not ok
  std::string dir;      // the folder looked at (Fashion-MNIST), empty for synthetic data
  std::string origin;   // why that folder: "\"dataset.path\"", "the default location"...
  int64_t train_size = 0, val_size = 0;  // samples served when ok
  std::vector<std::string> class_names;  // image folders: the class folders, sorted
};

// `override_path` as for load_dataset (a command-line folder wins).
DatasetProbe probe_dataset(const DatasetSpec& spec, const std::string& override_path = "");

// Image folders are counted, not declared (dataset_kinds.h: `counted`): sets
// the project's train_size and val_size to what the folders hold, and lowers
// the validation batch to the largest (up to its own) that splits the images
// evenly over the ranks, as a derived one is, so that validation sees every
// image. Nothing changes for the other kinds.
void settle_dataset_sizes(Project& project, int64_t train_size, int64_t val_size);
// The same from a probe; false (the project unchanged) when the probe failed.
bool settle_dataset_sizes(Project& project, const DatasetProbe& probe);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// load_dataset: turns a project's DatasetSpec into a DataSource, deciding
// where a dataset's files live and how synthetic data is seeded.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <renaissance/dataset_kinds.h>
#include <renaissance/dataset_probe.h>

#include <renaissance/project.h>
#include "data/data_source.h"

namespace tr {

// DatasetSpec has no seed of its own; callers that want the data to follow
// the training seed pass Project::training.seed instead.
inline constexpr uint64_t kDefaultSyntheticSeed = 0x5EED'DA7A;

struct DatasetLocation {
  std::string dir;
  std::string origin;  // why this folder: "the command line", "\"dataset.path\"", ...
};

// The folder of a dataset read from files, first of: override_path (e.g. a
// CLI flag), spec.path, the kind's environment variable, its default folder
// (dataset_kinds.h: for Fashion-MNIST $TR_FASHION_MNIST_DIR and
// /usr/share/datasets/fashion-mnist).
DatasetLocation resolve_dataset_dir(const DatasetSpec& spec, const std::string& override_path = "");

struct ImageFolderScan;
// Why --data does not apply to image folders (their folders are the project's).
std::string image_folder_data_override_problem();
// Throws UsageError when the training folder's class folders are not as many
// as the spec's classes (naming them and what to set).
void check_image_classes(const ImageFolderScan& scan, const DatasetSpec& spec);

// How to get a kind's files and where they go, ending a "no such file"
// message: `where` is the folder looked in.
std::string dataset_files_hint(const DatasetKindInfo& info, const DatasetLocation& where);

// Fashion-MNIST, CIFAR-10, CIFAR-100: loads and validates the files against
// the spec (the shape and classes the kind fixes; train_size / val_size may
// select a prefix of each split). Synthetic: a SyntheticSource of the spec's
// shape, classes and sizes.
// Throws UsageError naming the file or field that is wrong.
std::unique_ptr<DataSource> load_dataset(const DatasetSpec& spec,
                                         const std::string& override_path = "",
                                         uint64_t synthetic_seed = kDefaultSyntheticSeed);

}  // namespace tr

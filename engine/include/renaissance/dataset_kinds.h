// SPDX-License-Identifier: GPL-3.0-or-later
// What each dataset kind is: its name in the project file, its title, and
// for the kinds read from files, the shape, classes and split sizes those
// files fix, where their folder is looked for and what it must hold. The
// one table the project reader and writer, the loaders, the probe and the
// workbench's settings share.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <renaissance/project.h>

namespace tr {

// Where Fashion-MNIST is looked for when the project names no folder.
inline constexpr const char* kFashionMnistEnvVar = "TR_FASHION_MNIST_DIR";
inline constexpr const char* kFashionMnistDefaultDir = "/usr/share/datasets/fashion-mnist";

struct DatasetKindInfo {
  DatasetKind kind = DatasetKind::Synthetic;
  const char* name = "";     // in the project file: "fashion-mnist"
  const char* title = "";    // for people: "Fashion-MNIST"
  bool files = false;        // read from a folder (else generated)
  bool fixed_shape = false;  // the files fix shape, classes and sizes (else the project says them)
  bool counted = false;      // the sizes are the files' count, found when the data is looked at
  // The kinds with files:
  const char* folder_key = "";   // the "dataset" key naming the folder
  const char* env_var = "";      // the environment variable naming it
  const char* default_dir = "";  // where it is looked for otherwise ("~" is $HOME)
  const char* holds = "";        // what the folder holds, for messages
  const char* obtain = "";       // how to get the files
  int64_t height = 0, width = 0, channels = 0, classes = 0;
  int64_t train_size = 0, val_size = 0;      // samples in the complete files
  double mean[3] = {}, std[3] = {};          // the usual per-channel statistics
  const char* const* class_names = nullptr;  // `classes` of them, where the files fix them
};

// Every kind, in the order the workbench lists them.
std::span<const DatasetKindInfo> dataset_kinds();
const DatasetKindInfo& dataset_kind_info(DatasetKind kind);

// The folder the kind is looked for in when neither the command line, the
// project nor the environment names one ("~" expanded).
std::string default_dataset_dir(const DatasetKindInfo& info);

// What a dataset calls its classes: the names the project gives
// (DatasetSpec::class_names), else the kind's where its files fix them
// (Fashion-MNIST, CIFAR-10), else "class 0", "class 1", ... (image folders
// name theirs by folder: DatasetProbe::class_names).
std::vector<std::string> dataset_class_names(const DatasetSpec& spec);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The project's dataset and training settings as one table, one row a
// setting: its key in the file, its kind, bounds, choices and default (a
// default-constructed Project's), when it applies, where it lives, and what
// it means. The project reader and writer, the workbench's settings form,
// `renaissance-cli settings` and the table in docs/project-format.md all
// read it, so a new setting is one row here (LayerSpec is the same for
// layers). The optimizers have a table of their own (optimizer_kinds()).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/dataset_kinds.h>
#include <renaissance/project.h>

namespace tr {

enum class SettingKind {
  Int,      // a whole number in min..max
  Number,   // a number in the range lo..hi (an open end excludes its bound)
  Bool,     // true or false
  Choice,   // one of `choices` (the file holds its name)
  Text,     // a string
  Path,     // a file's or a folder's path (`folder`), a string in the file
  Seed,     // a whole number from 0 to 2^64 - 1
  Devices,  // "cpu:2", "cuda:0-3", "cuda:0,2"
  Values,   // one number per channel of the dataset
  Names,    // one distinct name per class of the dataset
};

// The settings form's groups, in its order.
enum class SettingGroup { Optimizer, Schedule, Run, Precision, Data };

// Which dataset kinds a dataset setting is for, by what the kinds table
// says of them. The reader refuses the key for another kind (saying why)
// and the writer leaves it out.
enum class DatasetScope {
  Any,
  Files,        // kinds read from files: their folder
  ImageFolder,  // image folders only
  Shape,        // kinds whose files do not fix the shape: synthetic, image folders
  Sizes,        // kinds whose sizes nothing counts: synthetic
};

// When the writer writes a setting (of a kind it applies to).
enum class WriteWhen {
  Always,
  Set,  // only away from its default (false, empty), so files that never used it stay as they were
};

struct SettingChoice {
  std::string_view name{};   // in the file: "adam"
  std::string_view title{};  // for people: "Adam"
  int value = 0;             // the enum's value
};

struct SettingSpec {
  std::string_view key{};  // its path in the file: "training.optimizer.lr"
  SettingKind kind = SettingKind::Int;
  SettingGroup group = SettingGroup::Run;
  std::string_view label{};  // the form's: "Learning rate"
  std::string_view help{};   // what it does, a sentence without its bounds
  // Int: the integers allowed.
  int64_t min = 0, max = 0;
  // Number: the values allowed, and the form's arrow step (0: a tenth of
  // the value's decade, for values spanning decades).
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  double step = 0;
  // Choice: the choices, and what one is called in a message ("unknown optimizer").
  std::span<const SettingChoice> choices{};
  std::string_view choice_what{};
  // When it means something, for the form and the docs: these optimizers
  // and schedules (a bit per enum value; 0: any), and only with the EMA on.
  // The file keeps such settings whatever the optimizer, so switching it
  // and back loses nothing.
  unsigned optimizers = 0, schedules = 0;
  bool needs_ema = false;
  DatasetScope dataset = DatasetScope::Any;
  WriteWhen write = WriteWhen::Always;
  // The form: what 0 shows as ("off"), a unit after the value (" epochs"),
  // a Path's Browse picks a folder (else a file).
  std::string_view zero_text{}, suffix{};
  bool folder = false;
  // Its key in the file is the dataset kind's folder key (path, dir,
  // train_dir: DatasetKindInfo::folder_key), not the last part of `key`.
  bool kind_key = false;
  // Where the value lives in a project (one of these, by kind).
  int64_t& (*int_ref)(Project&) = nullptr;
  double& (*number_ref)(Project&) = nullptr;
  bool& (*bool_ref)(Project&) = nullptr;
  std::string& (*text_ref)(Project&) = nullptr;  // Text, Path
  uint64_t& (*seed_ref)(Project&) = nullptr;
  DeviceSet& (*devices_ref)(Project&) = nullptr;
  std::vector<double>& (*values_ref)(Project&) = nullptr;
  std::vector<std::string>& (*names_ref)(Project&) = nullptr;
  int (*choice_get)(const Project&) = nullptr;
  void (*choice_set)(Project&, int) = nullptr;
  // Values: the kind's usual value for a channel where its files fix it
  // (the normalisation of Fashion-MNIST, CIFAR).
  double (*usual)(const DatasetKindInfo&, size_t channel) = nullptr;
};

// Every setting, dataset then training, in the file's order.
std::span<const SettingSpec> project_settings() noexcept;
// The row of `key` ("dataset.mean"), or null.
const SettingSpec* find_setting(std::string_view key) noexcept;

// The setting means something with the project's other settings (the
// form shows it; the docs say when).
bool setting_applies(const SettingSpec& s, const Project& p);
// A dataset setting is one of `kind`'s keys.
bool setting_in_dataset(const SettingSpec& s, DatasetKind kind);
// The dataset kinds a dataset setting is for, in words ("synthetic and
// image-folder"); empty for Any.
std::string dataset_scope_text(DatasetScope scope);
// What values it takes, in words ("> 0", "in [0, 1)", "1..100000", the choices).
std::string setting_bounds_text(const SettingSpec& s);

// The optimizers, one row each: what the file and the form call it, what
// it is, and the state the compiler gives it (its settings say which
// optimizers they are for: SettingSpec::optimizers).
struct OptimizerInfo {
  OptimizerKind kind = OptimizerKind::SGD;
  std::string_view name{};         // "adam"
  std::string_view title{};        // "Adam"
  std::string_view description{};  // a sentence
  // A first moment (the M series) even at momentum 0; else only when the
  // momentum is above 0.
  bool first_moment = false;
  bool second_moment = false;  // the V series
  bool layer_norms =
      false;  // per-layer weight and gradient norms (the N series), and its own graphs
};
std::span<const OptimizerInfo> optimizer_kinds() noexcept;
const OptimizerInfo& optimizer_info(OptimizerKind kind) noexcept;

// The table as docs/project-format.md shows it (Markdown, one row a
// setting): `renaissance-cli settings` prints it, and engine.projects keeps
// the document equal.
std::string settings_table_markdown();

}  // namespace tr

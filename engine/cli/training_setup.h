// SPDX-License-Identifier: GPL-3.0-or-later
// What `train` and `bench` share: the project with its overrides, the device
// choice (CUDA devices found, or the CPU backend with a clear message), the
// compiled plan, the dataset and the backend.
#pragma once

#include <memory>
#include <string>

#include "cli/options.h"
#include "compile/compiler.h"
#include "data/data_source.h"
#include "runtime/backend.h"
#include "runtime/trainer.h"
#include "setup/training_setup.h"

namespace tr::cli {

// The options this setup reads (with a value): the overrides plus "data" and "threads".
std::set<std::string> setup_options();

// The project file with the command line's overrides, through tr::prepare_training.
TrainingSetup prepare_training(const std::string& project_path, const ParsedArgs& args);

// `train`'s state options: --checkpoint-dir DIR, --resume FILE (read and
// checked for damage here, against the project when training starts) and
// the flag --eval-ema.
void read_checkpoint_options(const ParsedArgs& args, TrainOptions& options);

}  // namespace tr::cli

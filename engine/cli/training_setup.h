// SPDX-License-Identifier: GPL-3.0-or-later
// What `train` and `bench` share: the project with its overrides, the device
// choice (CUDA devices found, or the CPU backend with a clear message), the
// compiled plan, the dataset and the backend.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <renaissance/compiled_plan.h>
#include <renaissance/multi_node_options.h>
#include <renaissance/profile.h>
#include <renaissance/training.h>
#include <renaissance/training_job.h>
#include "options.h"

namespace tr::cli {

// The options this setup reads (with a value): the overrides plus "data" and "threads".
std::set<std::string> setup_options();

// `bench`'s options that measure the CUDA backend (with a value): --streams
// 5|1 and --capture on|off.
std::set<std::string> cuda_measure_options();

// `train`'s options for training across processes and machines (with a
// value): --nodes N, --node-rank R, --rendezvous HOST:PORT,
// --rendezvous-timeout SECONDS, --launcher auto|env|slurm|none.
std::set<std::string> node_options();
// Reads them (UsageError for a bad value or a missing companion option);
// without --nodes, what a launcher's environment says (launcher.h) where
// `launchers`, else one node.
MultiNodeOptions read_node_options(const ParsedArgs& args, bool launchers);

// The project file with the command line's overrides, ready to train.
// `allow_cpu_fallback`: see SetupOptions (bench: only with --allow-fallback).
// `nodes`: what read_node_options gave the caller (train, with launchers);
// without, the command line's alone.
TrainingJob prepare_training(const std::string& project_path, const ParsedArgs& args,
                             bool allow_cpu_fallback = true,
                             std::optional<MultiNodeOptions> nodes = std::nullopt);
// The same for a project already read (a recorded run's).
TrainingJob prepare_training(Project project, const ParsedArgs& args,
                             bool allow_cpu_fallback = true,
                             std::optional<MultiNodeOptions> nodes = std::nullopt);

// `train`'s state options: --checkpoint-dir DIR, --resume FILE (read and
// checked for damage here, against the project when training starts) and
// the flag --eval-ema.
void read_checkpoint_options(const ParsedArgs& args, TrainOptions& options);

}  // namespace tr::cli

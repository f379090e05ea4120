// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSetup: what every front end (the CLI, the workbench) assembles
// before training: the project compiled for its devices (CUDA devices that
// cannot run here fall back to as many CPU ranks, with a note saying so),
// the dataset and the backend (CUDA when the requested devices are there).
#pragma once

#include <memory>
#include <string>

#include <renaissance/training_job.h>

#include "compile/compiler.h"
#include "data/data_source.h"
#include "runtime/backend.h"

namespace tr {

struct TrainingSetup {
  std::shared_ptr<const CompiledProject> compiled;
  std::unique_ptr<DataSource> data;
  std::unique_ptr<Backend> backend;
  std::string device_note;  // e.g. why CUDA devices fell back to the CPU backend
  bool fell_back = false;   // CUDA devices were asked for; CPU ranks train instead
};

// Throws UsageError (or CompileError) naming what is wrong with the project,
// the dataset or the devices.
TrainingSetup prepare_training(Project project, const SetupOptions& options = {});

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSetup: what every front end (the CLI, the workbench) assembles
// before training: the project compiled for its devices (CUDA devices that
// cannot run here fall back to as many CPU ranks, with a note saying so),
// the dataset and the backend (CUDA when the requested devices are there).
#pragma once

#include <memory>
#include <string>

#include "compile/compiler.h"
#include "data/data_source.h"
#include "model/project.h"
#include "net/multi_node.h"
#include "runtime/backend.h"

namespace tr {

struct SetupOptions {
  std::string data_dir;  // empty: the dataset's default folder
  int cpu_threads = 0;   // 0: keep the current setting
  CompileOptions compile;
  MultiNodeOptions nodes;  // training across machines (CUDA devices only)
  // The CUDA backend's measuring modes (CudaBackendOptions: `bench`'s
  // --streams and --capture); UsageError when the run is not on CUDA.
  int cuda_streams = 5;
  bool cuda_capture = true;
  // CUDA devices asked for but not usable here: train on as many CPU ranks
  // with a note (true), or refuse with UsageError (false: a measurement must
  // not report the CPU as the GPU).
  bool allow_cpu_fallback = true;
  // The CPU backend's check of the step schedule (CpuBackendOptions): for
  // tests; it costs time on every step.
  bool check_step_schedule = false;
};

struct TrainingSetup {
  std::unique_ptr<CompiledProject> compiled;
  std::unique_ptr<DataSource> data;
  std::unique_ptr<Backend> backend;
  std::string device_note;  // e.g. why CUDA devices fell back to the CPU backend
  bool fell_back = false;   // CUDA devices were asked for; CPU ranks train instead
};

// Throws UsageError (or CompileError) naming what is wrong with the project,
// the dataset or the devices.
TrainingSetup prepare_training(Project project, const SetupOptions& options = {});

}  // namespace tr

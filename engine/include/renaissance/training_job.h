// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingJob: what a front end (the CLI, the workbench) trains through. It
// compiles the project for its devices (CUDA devices that cannot be used
// here fall back to as many CPU ranks, with a note saying so), loads the
// dataset, makes the backend, and then trains the plan it shows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <renaissance/compiled_plan.h>
#include <renaissance/multi_node_options.h>
#include <renaissance/project.h>
#include <renaissance/training.h>

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
  // CUDA convolutions keep to deterministic cuDNN algorithms (a seed's run
  // repeats bit for bit) instead of the fastest measured ones; the CPU's
  // kernels are deterministic either way.
  bool cuda_deterministic_conv = false;
  // CUDA devices asked for but not usable here: train on as many CPU ranks
  // with a note (true), or refuse with UsageError (false: a measurement must
  // not report the CPU as the GPU).
  bool allow_cpu_fallback = true;
  // The CPU backend's check of the step schedule (CpuBackendOptions): for
  // tests; it costs time on every step.
  bool check_step_schedule = false;
};

struct TrainingSetup;  // the engine's (setup/training_setup.h)

// The project's starting weights (training.init_from) as options.init_from,
// unless the options already resume a run or start from other weights (a
// front end's --init-from wins). Throws UsageError naming the file when it
// cannot be read.
void apply_project_init_from(const Project& project, TrainOptions& options);

class TrainingJob {
 public:
  // Throws UsageError (or ProjectError) naming what is wrong with the
  // project, the dataset or the devices.
  explicit TrainingJob(Project project, const SetupOptions& options = {});
  TrainingJob(TrainingJob&&) noexcept;
  TrainingJob& operator=(TrainingJob&&) noexcept;
  ~TrainingJob();

  const CompiledPlan& plan() const noexcept { return plan_; }
  const TrainingContext& context() const noexcept { return context_; }
  const std::string& device_note() const noexcept;  // why CUDA devices fell back, e.g.
  bool fell_back() const noexcept;  // CUDA devices were asked for; CPU ranks train instead

  // Trains on the calling thread (one more thread per rank); throws
  // UsageError for a checkpoint that does not fit the project and
  // std::runtime_error when the loss becomes NaN (with the step number).
  TrainReport train(const TrainOptions& options, const TrainCallbacks& callbacks = {});
  // The UsageErrors train() would throw for these options before its first
  // step (a checkpoint that does not fit, a step limit already reached), so a
  // front end can refuse them before it records anything.
  void check(const TrainOptions& options) const;

 private:
  std::unique_ptr<TrainingSetup> setup_;
  CompiledPlan plan_;
  TrainingContext context_;
};

}  // namespace tr

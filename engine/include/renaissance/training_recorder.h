// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingRecorder: what a training run records in the run store, for every
// front end (the CLI, the workbench): the run with its configuration at
// start (or its resumption), steps, epochs and checkpoints through the
// trainer's callbacks, and the final status.
#pragma once

#include <cstdint>
#include <string>

#include <renaissance/compiled_plan.h>
#include <renaissance/run_recorder.h>
#include <renaissance/training.h>

namespace tr::store {

// The run as the store keeps it: the project as trained (overrides applied)
// and, as hyper-parameters, its training settings plus what the options and
// the machine add (max_steps, validation, eval_ema, resumed_from, cpu_threads,
// dataset).
RunStart run_start_of(const CompiledPlan& plan, const TrainingContext& context,
                      const TrainOptions& options);

class TrainingRecorder {
 public:
  // Opens (or creates) the store and records the run as running; throws
  // StoreError before any training when the store cannot be used.
  TrainingRecorder(const std::string& store_path, const CompiledPlan& plan,
                   const TrainingContext& context, const TrainOptions& options,
                   RecorderOptions recorder_options = {});

  // Takes up the recorded run `run` again from options.resume (the run's
  // checkpoint, named by options.resume_source): RunStore::resume_run.
  TrainingRecorder(const std::string& store_path, int64_t run, const CompiledPlan& plan,
                   const TrainingContext& context, const TrainOptions& options,
                   RecorderOptions recorder_options = {});

  int64_t run_id() const noexcept { return recorder_.run_id(); }
  const ResumeRecord& resumed() const noexcept { return recorder_.resumed(); }
  const std::string& store_path() const noexcept { return recorder_.store_path(); }
  // Where this run keeps the weights it ends with (TrainOptions::final_weights):
  // final.ckpt in its own folder beside the store (store_location.h).
  std::string final_weights_path() const;

  // Adds recording to the callbacks, after what they already do. The
  // callbacks then refer to this recorder: keep it alive while they run.
  void attach(TrainCallbacks& callbacks);
  // Stopped on a stop request, else finished (the last epoch or max_steps),
  // with the final weights the report names. Returns what could not be
  // recorded (empty when all was).
  std::string ended(const TrainReport& report);
  std::string failed(const std::string& error);

 private:
  static ResumeStart resume_start_of(const TrainOptions& options);
  void count_images(const CompiledPlan& plan, const TrainingContext& context);

  RunRecorder recorder_;
  double batch_images_ = 0;  // a full global batch
  double last_images_ = 0;   // the partial last batch of an epoch
};

}  // namespace tr::store

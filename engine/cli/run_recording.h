// SPDX-License-Identifier: GPL-3.0-or-later
// How `renaissance-cli train` records its run: --store PATH (else the
// default store) or --no-store, a line naming the run, and a warning when
// the store could not take everything.
#pragma once

#include <memory>

#include <renaissance/training_recorder.h>
#include "options.h"

namespace tr::cli {

class RunRecording {
 public:
  // Starts the run in the store unless --no-store, or unless `here` is
  // false (a node other than 0 of a run across machines: node 0 records it);
  // a store that cannot be used fails here, before training starts.
  // `resume_run` > 0: continue that recorded run (from options.resume)
  // instead of starting a new one.
  RunRecording(const ParsedArgs& args, const CompiledPlan& plan, const TrainingContext& context,
               const TrainOptions& options, bool here = true, int64_t resume_run = 0);

  int64_t run_id() const noexcept { return recorder_ ? recorder_->run_id() : 0; }
  // Where the recorded run keeps its final weights; empty when not recorded.
  std::string final_weights_path() const {
    return recorder_ ? recorder_->final_weights_path() : std::string();
  }
  void attach(TrainCallbacks& callbacks);
  void ended(const TrainReport& report);
  void failed(const std::string& error);

 private:
  void warn(const std::string& problem) const;

  std::unique_ptr<store::TrainingRecorder> recorder_;
};

}  // namespace tr::cli

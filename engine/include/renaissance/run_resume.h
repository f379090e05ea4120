// SPDX-License-Identifier: GPL-3.0-or-later
// Continuing a recorded run as the same run (train --resume-run, the Runs
// view's Resume): which of its checkpoints to continue from, the project it
// was trained with, and the options it was started with.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <renaissance/checkpoint.h>
#include <renaissance/run_store.h>
#include <renaissance/training.h>

namespace tr::store {

struct RunResume {
  RunDetail run;
  std::string checkpoint_path;  // the latest of its checkpoints that can be read
  std::shared_ptr<const Checkpoint> checkpoint;
  // Later checkpoints that could not be used, each with why ("... is gone").
  std::vector<std::string> unusable;
  // How the run was started (its recorded hyper-parameters).
  int64_t epochs = 0;  // 0: the project's
  int64_t max_steps = -1;
  bool validate = true;
  bool eval_ema = false;
  std::string checkpoint_dir;  // where its checkpoint went: new ones go there too
};

// What the store says of it, without reading a checkpoint file (checkpoint
// and checkpoint_path stay empty): quick enough for a GUI thread. Throws
// StoreError naming the run when it cannot be resumed: no such run, still
// running, finished, or no checkpoint recorded.
RunResume describe_run_resume(const RunStore& store, int64_t run);

// The same, with the latest checkpoint that can be read; throws StoreError
// also when none of its checkpoint files can be read (each named with why).
RunResume find_run_resume(const RunStore& store, int64_t run);

// The options the run was started with, continuing from its checkpoint;
// what `options` already sets (a checkpoint folder, a step limit) stays.
void apply_run_resume(const RunResume& resume, TrainOptions& options);

}  // namespace tr::store

// SPDX-License-Identifier: GPL-3.0-or-later
// The trainer: epochs of the step schedule over the input pipeline, the last
// partial batch through its variant, validation after every epoch, the
// learning-rate schedule, profiling of chosen steps and a stop request that
// takes effect within one step, checkpoints and resuming from one. One host
// thread per rank of this process; its rank 0 reports, and global rank 0
// (node 0 when training across machines) saves checkpoints. The data split
// follows global ranks. When one rank fails, the others of this process are
// released from their collectives and the first error reaches the caller.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "data/data_source.h"
#include "runtime/backend.h"
#include "runtime/checkpoint.h"

namespace tr {

class TrainingSession;

struct TrainOptions {
  int64_t epochs = 0;  // 0: the project's
  // End after this many steps in all (a resumed run counts on): the run is
  // finished, validated and checkpointed as at an epoch end.
  int64_t max_steps = -1;
  bool validate = true;        // run validation after each epoch
  int64_t profile_begin = -1;  // profile steps [begin, end) (global step numbers)
  int64_t profile_end = -1;
  // Checked before every step: the run ends there as stopped, with a
  // checkpoint but no validation.
  const std::atomic<bool>* stop = nullptr;
  bool eval_ema = false;  // validate on the EMA weights (needs training.ema)
  // Non-empty: a checkpoint goes there at every epoch end and when training
  // stops early (<project>-epoch<E>.ckpt, <project>-step<S>.ckpt).
  std::string checkpoint_dir;
  // Continue from this checkpoint; `resume_source` names it in messages.
  std::shared_ptr<const Checkpoint> resume;
  std::string resume_source;
};

struct StepReport {
  int64_t step = 0;  // global step number, from 0
  int64_t epoch = 0;
  int64_t batch = 0;  // within the epoch
  int64_t batches = 0;
  double loss = 0, top1 = 0, lr = 0;
  double seconds = 0;  // this step's wall time
  bool partial = false;
  double loss_scale = 0;  // AMP: the loss scale after this step; 0 without AMP
};

struct EpochReport {
  int64_t epoch = 0;
  double train_loss = 0, train_top1 = 0;
  double val_loss = 0, val_top1 = 0, val_top5 = 0;
  bool validated = false;
  double images_per_s = 0;         // training images per second over the epoch (all ranks)
  double seconds = 0;              // training time of the epoch (without validation, nor the
                                   // time the step callbacks held it: a pause)
  std::vector<int64_t> confusion;  // classes x classes (row: true label, column: predicted); empty
                                   // when not validated
};

struct TrainReport {
  std::vector<EpochReport> epochs;
  std::vector<double> step_seconds;  // every step's wall time
  // The profiled steps' spans, every rank's, each stamped with its step:
  // spans are taken at the end of every profiled step, so work launched in
  // step k that runs past its end (the next batch's TRANSFER) says k, and
  // work between two profiled steps (an epoch end's validation, the next
  // epoch's first transfer) says the step after it. When training ends inside
  // the profiled steps, what ran after the last one says that last step.
  std::vector<ProfileSpan> profile;
  int64_t steps = 0;                     // global step count reached (a resumed run counts on)
  int64_t first_step = 0;                // where this run began (0, or a checkpoint's step)
  bool stopped = false;                  // by the stop request (on any rank or node)
  bool reached_max_steps = false;        // ended at TrainOptions::max_steps
  std::vector<std::string> checkpoints;  // files written, in order
};

struct TrainCallbacks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
  // On rank 0 when the profiled steps are done, once, with every rank's spans
  // of all of them (also in TrainReport::profile), so a front end can show
  // them mid-run. Not called when training ends inside the profiled steps.
  std::function<void(const std::vector<ProfileSpan>&)> on_profile;
  // On every rank's own thread after each of its steps (the step's device
  // work is done), so tests and tools can inspect per-rank state.
  std::function<void(int rank, const StepReport&, TrainingSession&)> on_rank_step;
};

// Throws UsageError for a dataset that does not match the project, a
// checkpoint that does not fit it (or is at max_steps already), or an
// unwritable checkpoint folder, and
// std::runtime_error when the loss becomes NaN (with the step number).
TrainReport train(const CompiledProject& cp, Backend& backend, const DataSource& data,
                  const TrainOptions& options, const TrainCallbacks& callbacks = {});

}  // namespace tr

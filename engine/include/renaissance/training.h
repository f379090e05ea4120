// SPDX-License-Identifier: GPL-3.0-or-later
// What a training run is asked and what it reports: the options of a run,
// the report after every step and epoch and at the end, and the callbacks a
// front end gets them through (TrainingJob::train runs it).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <renaissance/checkpoint.h>
#include <renaissance/profile.h>

namespace tr {

class TrainingSession;  // the engine's per-rank state, opaque here

struct TrainOptions {
  int64_t epochs = 0;  // 0: the project's
  // End after this many steps in all (a resumed run counts on): the run is
  // finished, validated and checkpointed as at an epoch end.
  int64_t max_steps = -1;
  bool validate = true;        // run validation after each epoch
  int64_t profile_begin = -1;  // profile steps [begin, end) (global step numbers)
  int64_t profile_end = -1;
  // Checked before every step is enqueued: the run ends there as stopped
  // (after the step already on its way, whose result is read one step
  // late), with a checkpoint but no validation.
  const std::atomic<bool>* stop = nullptr;
  bool eval_ema = false;  // validate on the EMA weights (needs training.ema)
  // Non-empty: a checkpoint goes there at every epoch end and when training
  // stops early (<project>-epoch<E>.ckpt, <project>-step<S>.ckpt).
  std::string checkpoint_dir;
  // Continue from this checkpoint; `resume_source` names it in messages.
  std::shared_ptr<const Checkpoint> resume;
  std::string resume_source;
  // Fine-tuning: start a new run (step 0, new optimizer state) from this
  // checkpoint's weights and BN statistics wherever a tensor of the same name
  // and shape is there, of any project; the rest start as a new run's would
  // (a last layer made for another class count). Not with `resume`.
  std::shared_ptr<const Checkpoint> init_from;
  std::string init_from_source;
  // Non-empty: when the run ends having trained (finished, stopped or at
  // max_steps; not when it fails), its final weights go to this file, its
  // folder made if need be: a checkpoint of the weights, EMA weights and BN
  // statistics only, no optimizer state, to predict with, export or
  // fine-tune from (init_from), never to resume.
  std::string final_weights;
  // For measuring the device alone (bench --resident-batch, as PyTorch's
  // benchmark reuses one batch): every step of an epoch trains on the
  // epoch's first batch, transferred once and left on the device, so no
  // step waits for the input pipeline or copies a batch.
  bool resident_batch = false;
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
  // How far the epoch went: it trained its batches up to `steps` of
  // `batches`. Fewer is an epoch cut short (a stop, the step limit), whose
  // figures cover only the steps it trained.
  int64_t steps = 0, batches = 0;
  bool complete() const noexcept { return steps >= batches; }
  double train_loss = 0, train_top1 = 0;
  double val_loss = 0, val_top1 = 0, val_top5 = 0;
  bool validated = false;
  double images_per_s = 0;         // training images per second over the epoch (all ranks)
  double seconds = 0;              // training time of the epoch (without validation, nor the
                                   // time the step callbacks held it: a pause)
  std::vector<int64_t> confusion;  // classes x classes (row: true label, column: predicted); empty
                                   // when not validated
};

// A checkpoint the trainer saved, or tried to: on_checkpoint hears of each
// as soon as it is on disk (or has failed), so a run killed later still
// knows it.
struct CheckpointReport {
  std::string path;
  TrainPosition position;  // where training continues from it
  // The epoch it ends, with its figures (not yet given to on_epoch); null for
  // a checkpoint mid-epoch (a stop).
  const EpochReport* epoch = nullptr;
  // Why it could not be written (disk full, folder gone); empty when it was.
  // Training goes on either way, and the previous checkpoint stays as it was.
  std::string error;
};

struct TrainReport {
  std::vector<EpochReport> epochs;
  std::vector<double> step_seconds;  // every step's wall time
  // The part of each step's wall time spent waiting for the input
  // pipeline's next batch (0 with TrainOptions::resident_batch).
  std::vector<double> input_wait_seconds;
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
  std::vector<std::string> checkpoint_errors;  // checkpoints that could not be written, and why
  // TrainOptions::init_from: the tensors taken from the checkpoint, and
  // those that started fresh, each with why ("fc.weight: [5,1,1,84] here,
  // [10,1,1,84] in the checkpoint").
  int64_t init_loaded = 0;
  std::vector<std::string> init_fresh;
  // TrainOptions::final_weights as written; empty when none was asked for,
  // the run trained no step, or writing failed (final_weights_error says why).
  std::string final_weights;
  std::string final_weights_error;
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
  // Once before the first step of a run started with TrainOptions::init_from:
  // the tensors taken from the checkpoint and those that start fresh (as in
  // TrainReport::init_loaded and init_fresh).
  std::function<void(int64_t loaded, const std::vector<std::string>& fresh)> on_init_from;
  // On the thread of global rank 0 (the one that saves) after every
  // checkpoint it wrote or failed to write.
  std::function<void(const CheckpointReport&)> on_checkpoint;
  // On the same thread once the final weights are written, or failed to be
  // (TrainOptions::final_weights; the report's error says why).
  std::function<void(const CheckpointReport&)> on_final_weights;
};

// What a run trains on and with, as the front ends and the run store describe it.
struct TrainingContext {
  std::string dataset;  // "Fashion-MNIST from DIR (60000 train, 10000 validation)"
  int64_t train_samples = 0;
  int64_t validation_samples = 0;
  int cpu_threads = 0;  // the CPU's threads the engine uses
  std::string backend;  // "cpu", "cuda"
  // The build of the CPU backend's own kernels it runs ("AVX-512", "AVX2",
  // "x86-64"; see DeviceScan::cpu_kernels); empty on another backend.
  std::string cpu_kernels;
  // This process's ranks: global ranks first_rank .. first_rank + ranks - 1
  // of global_world (more than ranks when training across machines).
  int first_rank = 0, ranks = 1, global_world = 1;
  bool leads = true;  // this process has global rank 0: it saves checkpoints and records the run
};

}  // namespace tr

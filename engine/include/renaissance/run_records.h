// SPDX-License-Identifier: GPL-3.0-or-later
// What the run store holds, as plain values: a run's start, its step and
// epoch metrics, checkpoints, notes, and the summaries and details readers
// (the CLI, the workbench) get back.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tr::store {

// A run store that cannot be opened, read or written; the message names the file.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Interrupted is never written by a trainer: it is what a later open finds
// for a run whose writer died while the run was still running.
enum class RunStatus { Running, Finished, Stopped, Failed, Interrupted };

std::string_view run_status_name(RunStatus s) noexcept;
std::optional<RunStatus> parse_run_status(std::string_view text) noexcept;

// A run that ended before its end (stopped, interrupted, failed): one that
// train --resume-run and the Runs view's Resume can take up again.
bool ended_early(RunStatus s) noexcept;

// What a trainer knows when a run starts. The store adds the engine version,
// git commit, writer process and times.
struct RunStart {
  std::string name;          // the project's name
  std::string project_json;  // the project as trained (overrides applied)
  std::string hyper_json;    // training settings as a JSON object
  std::string devices;       // "cpu:2"
  int world_size = 1;
  std::string precision;  // "fp32" or "amp"
  uint64_t seed = 0;
};

struct StepRecord {
  int64_t step = 0;  // global step number, from 0
  int64_t epoch = 0;
  double loss = 0, top1 = 0, lr = 0;
  std::optional<double> loss_scale;  // AMP only
  double images_per_s = 0;
};

struct EpochRecord {
  int64_t epoch = 0;  // from 0
  // The epoch's batches trained, of how many: fewer for an epoch cut short
  // (its figures cover only those). 0 of 0: a whole epoch (recorded before
  // the store kept the counts).
  int64_t steps = 0, batches = 0;
  bool partial() const noexcept { return batches > 0 && steps < batches; }
  double train_loss = 0, train_top1 = 0;
  std::optional<double> val_loss, val_top1, val_top5;  // absent when not validated
  double images_per_s = 0;
  double seconds = 0;   // training time of the epoch
  double ended_at = 0;  // Unix time; 0 lets the store stamp it
  // classes x classes, row-major (row: true label, column: predicted); empty when unknown.
  std::vector<int64_t> confusion;
  // One per class; derived from `confusion` when left empty.
  std::vector<double> per_class_accuracy;
};

struct CheckpointRecord {
  int64_t id = 0;
  std::string path;
  std::optional<int64_t> epoch, step;
  std::string metrics_json;  // a JSON object, or empty
  double created_at = 0;
};

// A run taken up again from one of its checkpoints (train --resume-run):
// what the store needs to know to continue the same record.
struct ResumeStart {
  std::string checkpoint_path;
  int64_t step = 0;   // the checkpoint's position: the next step to train
  int64_t epoch = 0;  // the epoch that step is in (0-based)
};

// One resumption as the run keeps it.
struct ResumeRecord {
  int64_t id = 0;
  double resumed_at = 0;
  RunStatus previous_status = RunStatus::Interrupted;
  // The run's last commit before the resumption: resumed_at - last_update
  // is the gap in the record.
  double last_update = 0;
  std::string checkpoint_path;
  int64_t from_step = 0;
  // Steps recorded after the checkpoint (trained before the run ended, but
  // not saved): dropped from the curve and trained again.
  int64_t retrained_steps = 0;
  int64_t writer_pid = 0;
};

struct NoteRecord {
  int64_t id = 0;
  std::string text;
  double created_at = 0;
};

// One row of a run list: enough to show, sort and filter without loading curves.
struct RunSummary {
  int64_t id = 0;
  std::string name;
  RunStatus status = RunStatus::Running;
  double started_at = 0;
  std::optional<double> ended_at;
  double updated_at = 0;  // the writer's last commit
  std::string devices;
  int world_size = 1;
  std::string precision;
  uint64_t seed = 0;
  int64_t steps = 0, epochs = 0;
  std::optional<double> final_train_loss, final_train_top1, final_val_loss, final_val_top1,
      final_val_top5;
  std::vector<std::string> tags;
  // The weights the run ended with (a checkpoint file in its run_folder);
  // empty: none kept (a run that failed, or trained no step).
  std::string final_weights;
};

struct RunDetail {
  RunSummary summary;
  std::string engine_version, git_commit;
  std::string writer_host;
  int64_t writer_pid = 0;
  std::string writer_start;  // see ProcessIdentity
  std::string error;         // why a failed run failed
  std::string hyper_json, project_json;
};

// Correct predictions per class (the confusion matrix's diagonal over its
// row sums); a class without samples gets 0. Empty for an empty matrix.
// Throws StoreError when the matrix is not square.
std::vector<double> per_class_accuracy(const std::vector<int64_t>& confusion);

// Throws StoreError saying why `run` cannot be resumed: still running (by
// whom), or finished (and what to do instead).
void check_resumable(const RunDetail& run);

// The side of a square matrix with `entries` entries, or -1.
int64_t confusion_classes(size_t entries) noexcept;

}  // namespace tr::store

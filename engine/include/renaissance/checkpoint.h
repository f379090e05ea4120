// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint files (docs/checkpoint-format.md): the training state a run
// continues from: persistent tensors (master and EMA weights, optimizer
// moments, BN running statistics), the loss scale, the position (epoch,
// batch, step: the state of every counter-based random stream), and the
// project as it was. The state is replicated across ranks, so a checkpoint
// does not depend on the world size it was saved from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/shape.h>

namespace tr {

// Where training stands: the next step to run is `batch` of `epoch` (0-based)
// and has the global number `step`.
struct TrainPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t step = 0;
};

struct CheckpointTensor {
  std::string region;  // "W_FIRST_CONV"
  std::string name;    // "conv1.weight"
  Shape shape;
  std::vector<float> values;
};

struct Checkpoint {
  std::string project_name;
  std::string project_json;  // the project as it was trained (project_to_json)
  int world_size = 1;        // saved from; informative only
  TrainPosition position;
  // What the data order, the random streams and the optimizer state depend on.
  uint64_t seed = 0;
  int64_t global_batch = 0;
  std::string optimizer;  // optimizer_name()
  std::string precision;  // precision_name()
  float loss_scale = 1.0f;
  float clean_steps = 0.0f;  // AMP: steps since the loss scale last changed
  // Optimizer updates applied (fewer than position.step when AMP skipped
  // steps); files without it count every step.
  int64_t updates = 0;
  std::vector<CheckpointTensor> tensors;
};

// Writes to `path` through a temporary file (`path`.tmp) that is synced to
// the disk before a rename puts it in place, and syncs the folder after: a
// crash, a kill or a power cut at any point leaves the previous checkpoint
// or this one under `path`, whole. Throws UsageError naming the file and the
// system's reason (a full disk, a folder gone), the previous one untouched.
void write_checkpoint(const Checkpoint& checkpoint, const std::string& path);

// Throws UsageError naming the file and what is wrong with it (missing,
// not a checkpoint, newer format, truncated, damaged header or tensor data).
Checkpoint read_checkpoint(const std::string& path);

}  // namespace tr

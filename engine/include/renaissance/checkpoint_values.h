// SPDX-License-Identifier: GPL-3.0-or-later
// What a checkpoint holds, as plain values: the position training stands
// at, the persistent tensors by region and name, and what the data order and
// the optimizer state depend on. The runtime writes and reads them
// (checkpoint.h); the ONNX exporter and importer only fill and read them.
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

}  // namespace tr

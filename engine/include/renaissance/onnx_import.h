// SPDX-License-Identifier: GPL-3.0-or-later
// An ONNX model as a project and a checkpoint: the graph becomes layers the
// designer shows and edits, its weights a checkpoint to predict with or to
// fine-tune from (train --init-from). An operator, attribute or tensor the
// workbench has no layer for is refused, naming it and its node.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/checkpoint_values.h>
#include <renaissance/project.h>

namespace tr {

struct OnnxImportOptions {
  std::string name;  // the project's; empty: the file's name without ".onnx"
  // How the model's inputs were normalised, per channel (one value: every
  // channel). Empty: the file's renaissance metadata, else the usual figures
  // of the dataset kind the file names, else none (mean 0, std 1). The
  // dataset kind and the class names come from the metadata too, never from
  // the input's shape: without them the project reads an image folder and
  // its classes are "class 0", "class 1", ...
  std::vector<double> mean, std;
};

struct OnnxImportResult {
  Project project;
  Checkpoint checkpoint;  // weights and BN statistics, at step 0
  int64_t onnx_nodes = 0;
  int64_t parameters = 0;  // weight values carried over
  int64_t opset = 0;
  std::string producer;  // "pytorch 1.13.1"
  // What the user should know: operators folded away (a trailing Softmax,
  // Identity), where the normalisation came from, the dataset chosen.
  std::vector<std::string> notes;
};

// Reads `path`. Throws UsageError naming the file, and the node where there
// is one, for anything it cannot turn into a project.
OnnxImportResult import_onnx(const std::string& path, const OnnxImportOptions& options = {});

// The ONNX operators the importer takes, each with what it becomes
// (`renaissance-cli onnx ops`, docs/onnx.md).
struct OnnxOpSupport {
  std::string_view op;
  std::string_view becomes;
};
std::span<const OnnxOpSupport> onnx_import_ops() noexcept;

}  // namespace tr

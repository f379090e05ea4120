// SPDX-License-Identifier: GPL-3.0-or-later
// A trained model as an ONNX file (opset 13) for other tools: NCHW at the
// interface as they expect, BatchNorm in its inference form, the weights of
// a checkpoint. The input is the normalised image (the project's dataset
// mean and std, which the file also records in its metadata), the output
// the logits or, on request, the class probabilities.
#pragma once

#include <cstdint>
#include <string>

#include <renaissance/checkpoint.h>
#include <renaissance/project.h>

namespace tr {

struct OnnxExportOptions {
  bool softmax = false;  // end in Softmax: probabilities instead of logits
  bool ema = true;       // the EMA weights where the checkpoint has them
};

struct OnnxExportSummary {
  int64_t nodes = 0;         // ONNX nodes written
  int64_t initializers = 0;  // weight tensors written
  int64_t parameters = 0;    // values in them
  bool used_ema = false;
  std::string input, output;  // the graph's input and output names
  int64_t classes = 0;
};

// Writes `project`'s model with `checkpoint`'s weights to `path` (through a
// temporary file and a rename). Throws ProjectError for a model that does
// not analyse, UsageError naming what is wrong otherwise: a tensor the
// checkpoint lacks or holds in another shape, a file that cannot be written.
OnnxExportSummary export_onnx(const Project& project, const Checkpoint& checkpoint,
                              const std::string& path, const OnnxExportOptions& options = {});

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// A trained model as an ONNX file (opset 13) for other tools: NCHW at the
// interface as they expect, BatchNorm in its inference form, the weights of
// a checkpoint. The input is the normalised image (the project's dataset
// mean and std, which the file also records in its metadata), the output
// the logits or, on request, the class probabilities. The metadata
// (docs/onnx.md) also names the dataset kind and the classes in label order,
// so an import, ours or another tool's, calls them what training did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/checkpoint_values.h>
#include <renaissance/project.h>

namespace tr {

struct OnnxExportOptions {
  bool softmax = false;  // end in Softmax: probabilities instead of logits
  bool ema = true;       // the EMA weights where the checkpoint has them
  // What the classes are called, in label order (class_names_of in
  // predict.h reads an image folder's). Empty: the project's own names where
  // it has them (DatasetSpec::class_names, or the kind's); an image folder's
  // unknown names are then left out rather than invented.
  std::vector<std::string> class_names;
};

struct OnnxExportSummary {
  int64_t nodes = 0;         // ONNX nodes written
  int64_t initializers = 0;  // weight tensors written
  int64_t parameters = 0;    // values in them
  bool used_ema = false;
  std::string input, output;  // the graph's input and output names
  int64_t classes = 0;
  std::vector<std::string> class_names;  // what the file records; empty: none known
};

// Writes `project`'s model with `checkpoint`'s weights to `path` (through a
// temporary file and a rename). Throws ProjectError for a model that does
// not analyse, UsageError naming what is wrong otherwise: a tensor the
// checkpoint lacks or holds in another shape, a file that cannot be written.
OnnxExportSummary export_onnx(const Project& project, const Checkpoint& checkpoint,
                              const std::string& path, const OnnxExportOptions& options = {});

}  // namespace tr

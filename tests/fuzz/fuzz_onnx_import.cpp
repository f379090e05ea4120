// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for tr::import_onnx (engine/onnx/onnx_import.cpp): the
// input is an ONNX model file (protobuf). Allowed outcomes: an import
// result, or a tr::UsageError with a message (naming the file, and the node
// where there is one). Any other exception (a ProjectError or a logic_error
// escaping the importer among them), a crash, a hang, a leak, an allocation
// far beyond what the file holds, or a sanitizer report is a finding. An
// imported project must save and load again as the same text, and the
// checkpoint must hold one value per element of each tensor's shape.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <renaissance/error.h>
#include <renaissance/onnx_import.h>
#include <renaissance/project_io.h>
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tr::fuzz::TempFile file("fuzz_onnx_import", ".onnx");
  tr::OnnxImportResult r;
  try {
    r = tr::import_onnx(file.write(data, size));
  } catch (const tr::UsageError& e) {
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    return 0;
  }
  const std::string once = tr::project_to_json(r.project);
  FUZZ_CHECK(tr::project_to_json(tr::parse_project(once, "fuzz-again.json")) == once);
  FUZZ_CHECK(r.checkpoint.project_json == once);
  for (const tr::CheckpointTensor& t : r.checkpoint.tensors)
    FUZZ_CHECK(static_cast<int64_t>(t.values.size()) == t.shape.elements());
  FUZZ_CHECK(r.onnx_nodes > 0 && r.parameters >= 0);
  return 0;
}

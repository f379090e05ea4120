// SPDX-License-Identifier: GPL-3.0-or-later
// User-facing errors: each names where the problem is (file, node, field)
// and what was expected, so the CLI and the workbench can show it as is.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace tr {

struct Diagnostic {
  std::string file;     // project file path, may be empty for in-memory projects
  std::string node;     // "conv1 (Conv2d)" or empty when not about a node
  std::string field;    // "params.kernel" or empty
  std::string message;  // what was wrong and what was expected
  int line = 0;         // 1-based, 0 when unknown (only JSON syntax errors know it)
  int column = 0;
  std::string node_id;  // the bare node id, for tools that select the node

  // "file:line:col: node 'conv1' (Conv2d), field 'params.kernel': message"
  std::string str() const;
};

// Thrown by the loader, the validator, shape inference and the compiler.
// Carries every problem found, not only the first.
class ProjectError : public std::runtime_error {
 public:
  explicit ProjectError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

// Any other engine error that a user can cause (bad CLI argument, missing file).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/error.h>

namespace tr {

std::string Diagnostic::str() const {
  std::string out;
  if (!file.empty()) {
    out.append(file);
    if (line > 0)
      out.append(":").append(std::to_string(line)).append(":").append(std::to_string(column));
    out.append(": ");
  }
  if (!node.empty()) out.append("node ").append(node);
  if (!field.empty()) {
    out.append(node.empty() ? "field '" : ", field '");
    out.append(field).append("'");
  }
  if (!node.empty() || !field.empty()) out.append(": ");
  out.append(message);
  return out;
}

static std::string join(const std::vector<Diagnostic>& ds) {
  std::string s;
  for (size_t i = 0; i < ds.size(); ++i) {
    if (i) s += "\n";
    s += ds[i].str();
  }
  return s;
}

ProjectError::ProjectError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}

}  // namespace tr

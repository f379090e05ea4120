// SPDX-License-Identifier: GPL-3.0-or-later
// Project text to a JSON DOM, refusing what a project never is (over 16 MiB,
// nested over 64 levels) and reporting every parse error at its line and
// column, and every duplicate key (which nlohmann's own parse would merge).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tr {

inline constexpr size_t kMaxProjectBytes = size_t{16} << 20;

struct JsonDom {
  nlohmann::json root;
  std::vector<std::string> duplicate_keys;  // their field paths
};

// Throws ProjectError (one diagnostic, with line and column) for text that
// is no JSON or no plausible project file; `file` names it in messages.
JsonDom parse_json_dom(std::string_view text, const std::string& file);

}  // namespace tr

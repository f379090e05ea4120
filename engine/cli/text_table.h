// SPDX-License-Identifier: GPL-3.0-or-later
// Plain-text tables for the command line: columns padded to their widest
// cell and, given a width, lines that fit it. Widths count UTF-8 code points
// (one column each), so a name in any script lines up and is never cut
// inside a character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tr::cli {

struct TableLayout {
  std::vector<bool> right;     // right-aligned columns (missing: left)
  std::vector<bool> elidable;  // columns whose wide cells are shortened first (missing: not)
  std::string indent;
  size_t max_width = 0;  // 0: no limit
};

// The table's lines. With a limit, the elidable columns give up width first,
// widest first and down to kMinElided columns each, every shortened cell
// ending in "…"; a line still too wide (the other columns alone exceed the
// limit) is cut to fit, also ending in "…".
std::vector<std::string> format_table(const std::vector<std::vector<std::string>>& rows,
                                      const TableLayout& layout);

void print_table(const std::vector<std::vector<std::string>>& rows, const TableLayout& layout);
// Without a width limit.
void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                 const std::string& indent = "");

// An elidable column keeps at least this many columns (or its whole cells when narrower).
constexpr size_t kMinElided = 8;

// Display width: code points (bytes that do not continue a UTF-8 sequence).
size_t display_width(std::string_view text) noexcept;

// `text` when it fits `width` columns, else its first width-1 code points
// and "…"; width 0 gives "".
std::string elide(std::string_view text, size_t width);

}  // namespace tr::cli

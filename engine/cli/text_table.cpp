// SPDX-License-Identifier: GPL-3.0-or-later
#include "text_table.h"

#include <algorithm>
#include <cstdio>

namespace tr::cli {

namespace {

constexpr std::string_view kEllipsis = "\u2026";  // one column, three bytes

bool continues(char byte) noexcept {
  return (static_cast<unsigned char>(byte) & 0xC0) == 0x80;
}

bool flag(const std::vector<bool>& flags, size_t column) {
  return column < flags.size() && flags[column];
}

// Width of a line with these column widths.
size_t line_width(const std::vector<size_t>& width, size_t indent) {
  size_t total = indent;
  for (const size_t w : width) total += w;
  return total + 2 * (width.empty() ? 0 : width.size() - 1);
}

// The column widths that fit `limit`: every elidable column is cut to the
// largest common cap (at least kMinElided) with which the line fits.
std::vector<size_t> fitted(std::vector<size_t> width, const TableLayout& layout) {
  const size_t indent = display_width(layout.indent);
  if (layout.max_width == 0 || line_width(width, indent) <= layout.max_width) return width;
  auto capped = [&](size_t cap) {
    std::vector<size_t> w = width;
    for (size_t c = 0; c < w.size(); ++c)
      if (flag(layout.elidable, c)) w[c] = std::min(w[c], cap);
    return w;
  };
  // Binary search: the width only grows with the cap.
  size_t lo = kMinElided, hi = *std::max_element(width.begin(), width.end());
  if (hi <= lo || line_width(capped(lo), indent) > layout.max_width) return capped(lo);
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (line_width(capped(mid), indent) <= layout.max_width)
      lo = mid;
    else
      hi = mid - 1;
  }
  return capped(lo);
}

}  // namespace

size_t display_width(std::string_view text) noexcept {
  size_t n = 0;
  for (const char c : text) n += !continues(c);
  return n;
}

std::string elide(std::string_view text, size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return {};
  // Keep width-1 code points: stop at the byte that starts the next one.
  size_t kept = 0, end = 0;
  while (end < text.size()) {
    if (!continues(text[end]) && kept++ == width - 1) break;
    ++end;
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::vector<std::string> format_table(const std::vector<std::vector<std::string>>& rows,
                                      const TableLayout& layout) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], display_width(row[c]));
    }
  width = fitted(std::move(width), layout);
  std::vector<std::string> lines;
  for (const auto& row : rows) {
    std::string line = layout.indent;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      const std::string cell = elide(row[c], width[c]);
      const size_t pad = width[c] - display_width(cell);
      if (flag(layout.right, c)) line.append(pad, ' ');
      line += cell;
      if (!last && !flag(layout.right, c)) line.append(pad, ' ');
      if (!last) line += "  ";
    }
    if (layout.max_width > 0) line = elide(line, layout.max_width);
    lines.push_back(std::move(line));
  }
  return lines;
}

void print_table(const std::vector<std::vector<std::string>>& rows, const TableLayout& layout) {
  for (const std::string& line : format_table(rows, layout)) std::printf("%s\n", line.c_str());
}

void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
                 const std::string& indent) {
  TableLayout layout;
  layout.right = right;
  layout.indent = indent;
  print_table(rows, layout);
}

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
#include "plot/pixel_decimation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tr::gui {

namespace {

void keep(DecimatedCurve& out, const std::vector<double>& x, const std::vector<double>& y,
          size_t i) {
  out.x.push_back(x[i]);
  out.y.push_back(y[i]);
}

}  // namespace

DecimatedCurve decimate_per_pixel(const std::vector<double>& x, const std::vector<double>& y,
                                  double x_lo, double x_hi, int columns) {
  DecimatedCurve out;
  const size_t n = std::min(x.size(), y.size());
  if (n == 0) return out;
  columns = std::max(1, columns);
  const auto first =
      static_cast<size_t>(std::lower_bound(x.begin(), x.begin() + n, x_lo) - x.begin());
  const auto last =
      static_cast<size_t>(std::upper_bound(x.begin(), x.begin() + n, x_hi) - x.begin());
  // Few enough points: nothing to gain.
  if (last - first <= static_cast<size_t>(4 * columns)) {
    const size_t from = first > 0 ? first - 1 : 0;
    const size_t to = std::min(n, last + 1);
    out.x.assign(x.begin() + from, x.begin() + to);
    out.y.assign(y.begin() + from, y.begin() + to);
    return out;
  }
  out.x.reserve(4 * static_cast<size_t>(columns) + 2);
  out.y.reserve(4 * static_cast<size_t>(columns) + 2);
  if (first > 0) keep(out, x, y, first - 1);
  const double width = x_hi > x_lo ? x_hi - x_lo : 1.0;
  const double per_column = columns / width;
  size_t i = first;
  while (i < last) {
    const auto column =
        std::min(columns - 1, static_cast<int>(std::floor((x[i] - x_lo) * per_column)));
    const size_t begin = i;
    size_t lo = i, hi = i;
    bool gap = false;
    double lo_v = std::numeric_limits<double>::infinity();
    double hi_v = -std::numeric_limits<double>::infinity();
    for (; i < last; ++i) {
      if (std::min(columns - 1, static_cast<int>(std::floor((x[i] - x_lo) * per_column))) != column)
        break;
      const double v = y[i];
      if (!std::isfinite(v)) {
        gap = true;
        continue;
      }
      if (v < lo_v) lo_v = v, lo = i;
      if (v > hi_v) hi_v = v, hi = i;
    }
    const size_t end = i - 1;
    // First, extremes in the order they occurred, last: each once.
    size_t picks[4] = {begin, std::min(lo, hi), std::max(lo, hi), end};
    size_t previous = static_cast<size_t>(-1);
    for (size_t p : picks) {
      if (p == previous) continue;
      keep(out, x, y, p);
      previous = p;
    }
    if (gap && std::isfinite(y[end])) {
      // A NaN inside the column must still break the drawn line.
      out.x.push_back(x[end]);
      out.y.push_back(std::numeric_limits<double>::quiet_NaN());
    }
  }
  if (last < n) keep(out, x, y, last);
  return out;
}

}  // namespace tr::gui

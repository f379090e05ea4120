// SPDX-License-Identifier: GPL-3.0-or-later
// Min/max decimation per pixel column: a curve of any length drawn into W
// pixel columns keeps, for every column, its first, lowest, highest and last
// point (in their order), so every spike stays visible and the line looks
// exactly as the full curve would; curves are stored at full resolution and
// only what is drawn is reduced.
#pragma once

#include <cstddef>
#include <vector>

namespace tr::gui {

struct DecimatedCurve {
  std::vector<double> x, y;
};

// `x` ascending (equal values allowed), `y` the same length. Points with x in
// [x_lo, x_hi] are binned into `columns` equal columns; the nearest point on
// each side outside the range is kept so the line runs to the plot's edges.
// Non-finite y values are kept as gaps (NaN) in their column.
DecimatedCurve decimate_per_pixel(const std::vector<double>& x, const std::vector<double>& y,
                                  double x_lo, double x_hi, int columns);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's time axis: ticks at round 1-2-5 steps and durations written
// in the unit that suits them (µs, ms, s).
#pragma once

#include <QString>
#include <vector>

namespace tr::gui {

struct TimeTick {
  double us = 0;
  QString text;
};

// Ticks inside [t0_us, t1_us] drawn over `width_px`, at least `min_spacing_px` apart.
std::vector<TimeTick> time_ticks(double t0_us, double t1_us, double width_px,
                                 double min_spacing_px);

// "850 µs", "1.25 ms", "2.40 s".
QString duration_text(double us);

}  // namespace tr::gui

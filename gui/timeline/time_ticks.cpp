// SPDX-License-Identifier: GPL-3.0-or-later
// Round tick steps for the time axis and readable durations.
#include "timeline/time_ticks.h"

#include <algorithm>
#include <cmath>

namespace tr::gui {

namespace {

// The smallest 1, 2 or 5 times a power of ten that is at least `x`.
double round_step(double x) {
  const double p = std::pow(10.0, std::floor(std::log10(x)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= x * (1 - 1e-9)) return m * p;
  return 10 * p;
}

QString with_unit(double us, double step_us) {
  double scale = 1;
  const char* unit = "µs";
  if (step_us >= 1e5) {
    scale = 1e6;
    unit = "s";
  } else if (step_us >= 100) {
    scale = 1e3;
    unit = "ms";
  }
  // Enough decimals to tell neighbouring ticks apart, no more.
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step_us / scale))), 0, 6);
  return QString::number(us / scale, 'f', decimals) + QString::fromUtf8(" ") +
         QString::fromUtf8(unit);
}

}  // namespace

std::vector<TimeTick> time_ticks(double t0_us, double t1_us, double width_px,
                                 double min_spacing_px) {
  std::vector<TimeTick> out;
  if (!(t1_us > t0_us) || width_px <= 0 || min_spacing_px <= 0) return out;
  const double step = round_step((t1_us - t0_us) * min_spacing_px / width_px);
  for (double k = std::ceil(t0_us / step); k * step <= t1_us; k += 1) {
    const double t = k * step;
    out.push_back({t, with_unit(std::abs(t) < step * 1e-6 ? 0.0 : t, step)});
  }
  return out;
}

QString duration_text(double us) {
  const double a = std::abs(us);
  if (a >= 1e6) return QString::number(us / 1e6, 'f', 2) + QStringLiteral(" s");
  if (a >= 1e3) return QString::number(us / 1e3, 'f', 2) + QStringLiteral(" ms");
  return QString::number(us, 'f', a >= 100 ? 0 : 1) + QString::fromUtf8(" µs");
}

}  // namespace tr::gui

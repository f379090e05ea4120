// SPDX-License-Identifier: GPL-3.0-or-later
#include "pool_band.h"

#include <QCoreApplication>

namespace tr::gui {

bool in_band(const MemoryPlan& plan, const DTensor& t, int band) {
  if (band < 0) return true;
  if (band == kPoolBand) return plan.packed() && plan.step_local(t.region) && plan.in_use(t.id);
  return region_index(t.region) == band;
}

int band_of(const MemoryPlan& plan, const DTensor& t) {
  return plan.packed() && plan.step_local(t.region) ? kPoolBand : region_index(t.region);
}

QString band_title(int band) {
  if (band == kPoolBand)
    return QCoreApplication::translate("PoolBand", "Step-local pool (F, T, S)");
  if (band < 0 || band >= kNumRegions) return {};
  const std::string_view n = region_title(static_cast<Region>(band));
  return QString::fromUtf8(n.data(), static_cast<qsizetype>(n.size()));
}

QString pool_band_long_title(bool gradients) {
  if (gradients)
    return QCoreApplication::translate(
        "PoolBand",
        "Step-local pool (F, T, S, G, H): features, gradient slots, scratch, what a forward saves "
        "for its backward, and the full weight gradients until their reduce-scatter — packed by "
        "lifetime");
  return QCoreApplication::translate(
      "PoolBand",
      "Step-local pool (F, T, S): features, gradient slots, scratch, what a forward saves for its "
      "backward — packed by lifetime");
}

}  // namespace tr::gui

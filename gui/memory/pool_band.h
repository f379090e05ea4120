// SPDX-License-Identifier: GPL-3.0-or-later
// The step-local pool of a packed plan as one of the memory view's bands.
// Its F and T regions share bytes inside the pool, so the strip, the tensor
// table and the owners line treat the pool as one band after the others,
// whose band numbers are their region indexes.
#pragma once

#include <QString>

#include <renaissance/memory_plan.h>

namespace tr::gui {

inline constexpr int kPoolBand = kNumRegions;

// Whether `t` belongs to `band` of `plan` (-1: every tensor). The pool holds
// the step-local tensors this variant uses; the others have no bytes in it.
bool in_band(const MemoryPlan& plan, const DTensor& t, int band);
// The band that shows `t` in `plan`: the pool for a packed step-local tensor.
int band_of(const MemoryPlan& plan, const DTensor& t);
// "Step-local pool (F, T, S)", or the region's title.
QString band_title(int band);
// The pool's name with what it holds and how, where there is room for it
// (`gradients`: a ZeRO-2 plan's, which holds the full weight gradients too).
QString pool_band_long_title(bool gradients = false);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes a plan needs against the compute it adds as more of its saved
// features are recomputed in the backward, in the order a memory budget
// takes them (CompiledPlan::recompute_candidates): the curve a user picks a
// budget from.
#pragma once

#include <cstdint>
#include <vector>

#include <renaissance/compiled_plan.h>

namespace tr {

struct RecomputePoint {
  int recomputed = 0;             // the first this many candidates
  uint64_t bytes_per_device = 0;  // the plan's
  double extra_flops_share = 0;   // of a step's FLOPs (3x the forward), added
};

// At most `points` prefixes of the candidates (at least the first, none,
// and the last, all), evenly spread; each a full compile of `project`
// without a budget of its own. Throws ProjectError as compile_plan does.
std::vector<RecomputePoint> recompute_curve(const Project& project, const CompileOptions& options,
                                            int points = 24);

}  // namespace tr

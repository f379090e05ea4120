// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/recompute_curve.h>

#include <algorithm>

#include "compile/compiler.h"
#include "compile/plan_report.h"

namespace tr {

std::vector<RecomputePoint> recompute_curve(const Project& project, const CompileOptions& options,
                                            int points) {
  Project unbudgeted = project;
  unbudgeted.training.memory_budget_mib = 0;
  CompileOptions o = options;
  o.memory_budget = 0;
  o.recompute_layers.clear();
  const CompiledProject plain = compile_project(unbudgeted, o);
  const std::vector<RecomputeChoice>& candidates = plain.recompute_candidates;
  const int n = static_cast<int>(candidates.size());
  const int steps = std::max(1, std::min(n, points - 1));
  std::vector<RecomputePoint> curve;
  curve.push_back({0, plain.bytes_per_device(), 0.0});
  int last = 0;
  for (int s = 1; s <= steps && n > 0; ++s) {
    const int k = static_cast<int>(static_cast<int64_t>(n) * s / steps);
    if (k == last) continue;
    last = k;
    o.recompute_layers.clear();
    for (int i = 0; i < k; ++i)
      o.recompute_layers.push_back(candidates[static_cast<size_t>(i)].layer);
    const CompiledProject cp = compile_project(unbudgeted, o);
    curve.push_back({k, cp.bytes_per_device(), recompute_flops_share(cp)});
  }
  return curve;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include "setup/plan_fit.h"

#include <renaissance/largest_batch.h>
#include "compile/plan_report.h"

namespace tr {

std::string plan_fit_problem(const CompiledProject& cp, const DeviceScan& scan) {
  const DeviceSet& devs = cp.project.training.devices;
  const uint64_t need = cp.bytes_per_device();
  // A budget the plan cannot meet even recomputing all it may.
  if (const uint64_t budget = cp.options.memory_budget; budget > 0 && need > budget) {
    std::string text = "the plan needs " + human_bytes(need) + " per device";
    text += cp.options.recompute
                ? " even recomputing all " + std::to_string(cp.recompute_candidates.size()) +
                      " layer outputs it may, over the memory budget of " + human_bytes(budget)
                : ", over the memory budget of " + human_bytes(budget) +
                      ", and --recompute off recomputes nothing";
    const BatchSearch best = largest_fitting_batch(cp.design, budget, cp.options);
    if (best.global_batch > 0)
      text += "; the largest global batch that fits it is " + std::to_string(best.global_batch) +
              " (--batch " + std::to_string(best.global_batch) + ")";
    return text;
  }
  const RankMemory m = memory_per_rank(devs, scan);
  if (!m.missing.empty() || need <= m.bytes) return {};
  std::string text = "the plan needs " + human_bytes(need) + " per device, and " + devs.str() +
                     " has " + human_bytes(m.bytes);
  text += devs.kind == DeviceKind::CPU
              ? " per rank (" + human_bytes(scan.host_available_bytes) +
                    " of host memory available, shared by " + std::to_string(cp.world_size) +
                    " rank" + (cp.world_size > 1 ? "s" : "") + ")"
              : " on its smallest device";
  // Recomputing layer outputs may be all it takes.
  if (cp.options.recompute && cp.options.memory_budget == 0) {
    CompileOptions o = cp.options;
    o.memory_budget = m.bytes >> 20 << 20;  // what the suggestion says, in whole MiB
    const CompiledProject fitted = compile_project(cp.design, o);
    if (fitted.bytes_per_device() <= o.memory_budget)
      return text + "; it fits with recomputation (--memory-budget " +
             std::to_string(m.bytes >> 20) + "MiB: " + recompute_summary(fitted) + ")";
  }
  const BatchSearch best = largest_fitting_batch(cp.design, m.bytes, cp.options);
  if (best.global_batch > 0)
    text += "; the largest global batch that fits is " + std::to_string(best.global_batch) +
            " (--batch " + std::to_string(best.global_batch) + ")";
  else
    text += "; not even one sample per rank fits (" + human_bytes(best.bytes_at_one) +
            "): lower the validation batch in \"variants\"";
  return text;
}

}  // namespace tr

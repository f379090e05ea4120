// SPDX-License-Identifier: GPL-3.0-or-later
#include "setup/plan_fit.h"

#include <renaissance/largest_batch.h>
#include "compile/plan_report.h"

namespace tr {

std::string plan_fit_problem(const CompiledProject& cp, const DeviceScan& scan) {
  const DeviceSet& devs = cp.project.training.devices;
  const RankMemory m = memory_per_rank(devs, scan);
  const uint64_t need = cp.bytes_per_device();
  if (!m.missing.empty() || need <= m.bytes) return {};
  std::string text = "the plan needs " + human_bytes(need) + " per device, and " + devs.str() +
                     " has " + human_bytes(m.bytes);
  text += devs.kind == DeviceKind::CPU
              ? " per rank (" + human_bytes(scan.host_available_bytes) +
                    " of host memory available, shared by " + std::to_string(cp.world_size) +
                    " rank" + (cp.world_size > 1 ? "s" : "") + ")"
              : " on its smallest device";
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

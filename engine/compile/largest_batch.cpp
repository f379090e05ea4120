// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/largest_batch.h>

#include <algorithm>
#include <memory>

#include <renaissance/error.h>
#include <renaissance/project_limits.h>

#include "compile/compiler.h"

namespace tr {

BatchSearch largest_fitting_batch(const Project& project, uint64_t budget_per_device,
                                  const CompileOptions& options) {
  Project trial = project;
  for (VariantSpec& v : trial.variants)
    if (v.kind == VariantKind::Train || v.kind == VariantKind::LastBatch) v.batch = 0;
  const int64_t world = std::max(1, trial.training.devices.world_size());
  BatchSearch result;
  // The plan's bytes at a per-rank batch, or none when it does not compile
  // there (counted as not fitting); the last plan that fits, at `good`, is kept.
  std::shared_ptr<const CompiledProject> last, kept;
  auto bytes_at = [&](int64_t per_rank, uint64_t& bytes) {
    trial.training.global_batch = per_rank * world;
    ++result.compiles;
    try {
      last = std::make_shared<const CompiledProject>(compile_project(trial, options));
      bytes = last->bytes_per_device();
      return true;
    } catch (const ProjectError&) {
      bytes = 0;
      return false;
    }
  };
  auto fits = [&](int64_t per_rank, uint64_t& bytes) {
    const bool ok = bytes_at(per_rank, bytes) && bytes <= budget_per_device;
    if (ok) kept = last;
    return ok;
  };
  const int64_t most = limits::kMaxBatch / world;
  uint64_t bytes = 0;
  const bool one_fits = fits(1, bytes);
  result.bytes_at_one = bytes;
  if (!one_fits) return result;
  int64_t good = 1, bad = most + 1;
  uint64_t good_bytes = bytes;
  // Doubling finds a batch that does not fit, then bisection the edge.
  for (int64_t b = 2; b <= most; b *= 2) {
    if (!fits(b, bytes)) {
      bad = b;
      break;
    }
    good = b;
    good_bytes = bytes;
  }
  if (bad > most && good < most) {
    if (fits(most, bytes)) {
      good = most;
      good_bytes = bytes;
    } else {
      bad = most;
    }
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    if (fits(mid, bytes)) {
      good = mid;
      good_bytes = bytes;
    } else {
      bad = mid;
    }
  }
  result.global_batch = good * world;
  result.bytes_per_device = good_bytes;
  result.plan = CompiledPlan(kept);  // every fit moved `good` there
  return result;
}

}  // namespace tr

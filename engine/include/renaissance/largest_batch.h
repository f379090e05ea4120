// SPDX-License-Identifier: GPL-3.0-or-later
// largest_fitting_batch: the largest global batch whose compiled plan fits a
// memory budget per device, found by bisection over compiles (the plan's
// bytes grow with the batch). The project's other settings stay as they
// are; a train or last-batch variant with a batch of its own derives it
// from the global batch instead, so the search moves them together.
#pragma once

#include <cstdint>

#include <renaissance/compiled_plan.h>

namespace tr {

struct BatchSearch {
  int64_t global_batch = 0;       // 0: not even one sample per rank fits
  uint64_t bytes_per_device = 0;  // the plan's at that batch
  uint64_t bytes_at_one = 0;      // the plan's at one sample per rank (0: does not compile)
  int compiles = 0;
  CompiledPlan plan;  // compiled at global_batch (empty when none fits)
};

// `budget_per_device`: the bytes one rank's arena may take (a CUDA device's
// memory, or the host's available memory shared by the CPU ranks).
BatchSearch largest_fitting_batch(const Project& project, uint64_t budget_per_device,
                                  const CompileOptions& options = {});

}  // namespace tr

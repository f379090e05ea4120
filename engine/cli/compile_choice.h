// SPDX-License-Identifier: GPL-3.0-or-later
// The `--rewrites on|off`, `--recompute on|off` and `--memory-packing on|off`
// options of plan, train and bench: whether the compiler fuses BN+ReLU and
// writes dX in place, whether it computes LayerNorm and activation outputs
// again in the backward, and whether it shares step-local bytes by lifetime
// (see CompileOptions). `--rewrites off` also turns recomputation off.
// `--memory-budget BYTES` has the planner recompute what the plan needs to
// fit in BYTES a device. The feature layout is the project's
// (training.feature_layout, which `--feature-layout` overrides).
#pragma once

#include <renaissance/compiled_plan.h>
#include "options.h"

namespace tr::cli {

inline constexpr const char* kRewritesOption = "rewrites";
inline constexpr const char* kPackingOption = "memory-packing";
inline constexpr const char* kRecomputeOption = "recompute";
// --validation-micro-batch fit|as-written|N (CompileOptions::validation_micro_batch).
inline constexpr const char* kValidationMicroBatchOption = "validation-micro-batch";
// --memory-budget BYTES (CompileOptions::memory_budget).
inline constexpr const char* kMemoryBudgetOption = "memory-budget";
// Throws UsageError for a value other than on/off, naming the option, and
// ProjectError for a feature layout this CPU does not take.
CompileOptions compile_options_from(const ParsedArgs& args, const Project& project);

}  // namespace tr::cli

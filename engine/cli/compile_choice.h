// SPDX-License-Identifier: GPL-3.0-or-later
// The `--rewrites on|off`, `--recompute on|off` and `--memory-packing on|off`
// options of plan, train and bench: whether the compiler fuses BN+ReLU and
// writes dX in place, whether it computes LayerNorm and activation outputs
// again in the backward, and whether it shares step-local bytes by lifetime
// (see CompileOptions). `--rewrites off` also turns recomputation off.
// `--memory-budget BYTES` has the planner recompute what the plan needs to
// fit in BYTES a device.
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
// --feature-layout blocked|nhwc (CompileOptions::channel_block: the CPU's, or none).
inline constexpr const char* kFeatureLayoutOption = "feature-layout";

// Throws UsageError for a value other than on/off, naming the option.
CompileOptions compile_options_from(const ParsedArgs& args);

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
// The `--rewrites on|off` and `--memory-packing on|off` options of plan,
// train and bench: whether the compiler fuses BN+ReLU and writes dX in place,
// and whether it shares step-local bytes by lifetime (see CompileOptions).
#pragma once

#include <renaissance/compiled_plan.h>
#include "options.h"

namespace tr::cli {

inline constexpr const char* kRewritesOption = "rewrites";
inline constexpr const char* kPackingOption = "memory-packing";

// Throws UsageError for a value other than on/off, naming the option.
CompileOptions compile_options_from(const ParsedArgs& args);

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
// The `--rewrites on|off` option of plan, train and bench: whether the
// compiler fuses BN+ReLU and writes dX in place (see CompileOptions).
#pragma once

#include "cli/options.h"
#include "compile/compiler.h"

namespace tr::cli {

inline constexpr const char* kRewritesOption = "rewrites";

// Throws UsageError for a value other than on/off.
CompileOptions compile_options_from(const ParsedArgs& args);

}  // namespace tr::cli

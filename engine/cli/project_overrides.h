// SPDX-License-Identifier: GPL-3.0-or-later
// The training settings a command line may override (--devices, --precision,
// --batch, --epochs, --seed, and the flag --eval-ema, which keeps the EMA the
// validation then uses), applied to a loaded project with clear errors.
#pragma once

#include <set>
#include <string>

#include <renaissance/project.h>
#include "options.h"

namespace tr::cli {

// The option names apply_overrides understands that take a value.
const std::set<std::string>& override_options();

// Applies the overrides present in `args`; throws UsageError naming the option.
// `nodes`: the processes of a run across processes and machines, each with
// the devices the project (or --devices) gives.
void apply_overrides(const ParsedArgs& args, Project& project, int nodes = 1);

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
// Step lifetimes (renaissance/step_lifetimes.h) of the engine's compiled
// program, for the compiler's own passes and reports.
#pragma once

#include <renaissance/step_lifetimes.h>

#include "compile/compiler.h"

namespace tr {

StepLifetimes step_lifetimes(const CompiledProject& cp, int variant);

}  // namespace tr

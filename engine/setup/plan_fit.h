// SPDX-License-Identifier: GPL-3.0-or-later
// The refusal of a plan that does not fit the devices it would train on,
// before any arena is allocated: both numbers, and the largest global batch
// whose plan fits (the same rule the workbench's fit problem uses).
#pragma once

#include <string>

#include <renaissance/devices.h>
#include "compile/compiler.h"

namespace tr {

// Empty when the plan fits or the devices cannot be checked here; otherwise
// what is wrong and what to do, for a person.
std::string plan_fit_problem(const CompiledProject& cp, const DeviceScan& scan);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The plan reports (renaissance/plan_report.h) of the engine's compiled
// program, for the engine's own code.
#pragma once

#include <cstdint>
#include <string>

#include <renaissance/plan_report.h>
#include <nlohmann/json_fwd.hpp>

#include "compile/compiler.h"

namespace tr {

std::string plan_report_text(const CompiledProject& cp);
nlohmann::json plan_report_json(const CompiledProject& cp);
uint64_t unpacked_bytes_per_device(const CompiledProject& cp);
std::string graphs_report_text(const CompiledProject& cp);
std::string recompute_summary(const CompiledProject& cp);
double recompute_flops_share(const CompiledProject& cp);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The validating reader: a project file's DOM into a Project, collecting
// every problem (with file, node and field) instead of stopping at the first.
#pragma once

#include <string>

#include <renaissance/project.h>
#include "model/json_dom.h"

namespace tr {

inline constexpr int kProjectFormat = 1;

// Throws ProjectError listing every problem.
Project read_project(const JsonDom& dom, const std::string& file);

}  // namespace tr

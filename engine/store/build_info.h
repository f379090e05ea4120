// SPDX-License-Identifier: GPL-3.0-or-later
// The engine version and the git commit it was configured from, as each run
// records them. Only build_info.cpp sees the generated header, so a new
// commit recompiles one file, not the engine.
#pragma once

#include <string_view>

namespace tr::store {

std::string_view engine_version() noexcept;
// Short hash of HEAD when CMake last configured the build; "unknown" outside a git checkout.
std::string_view engine_git_commit() noexcept;

}  // namespace tr::store

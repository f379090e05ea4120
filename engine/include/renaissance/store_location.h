// SPDX-License-Identifier: GPL-3.0-or-later
// Where the run store lives: an explicit path (--store), else
// $RENAISSANCE_STORE, else the user's XDG data directory.
#pragma once

#include <string>

namespace tr::store {

constexpr const char* kStoreEnvVar = "RENAISSANCE_STORE";

// `explicit_path` wins when not empty; then $RENAISSANCE_STORE; then
// $XDG_DATA_HOME/renaissance/runs.sqlite (when absolute, as the XDG spec
// asks), else $HOME/.local/share/renaissance/runs.sqlite. Throws StoreError
// when none of them gives a path.
std::string resolve_store_path(const std::string& explicit_path = {});

}  // namespace tr::store

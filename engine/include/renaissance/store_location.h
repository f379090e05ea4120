// SPDX-License-Identifier: GPL-3.0-or-later
// Where the run store lives: an explicit path (--store), else
// $RENAISSANCE_STORE, else the user's XDG data directory.
#pragma once

#include <cstdint>
#include <string>

namespace tr::store {

constexpr const char* kStoreEnvVar = "RENAISSANCE_STORE";

// `explicit_path` wins when not empty; then $RENAISSANCE_STORE; then
// $XDG_DATA_HOME/renaissance/runs.sqlite (when absolute, as the XDG spec
// asks), else $HOME/.local/share/renaissance/runs.sqlite. Throws StoreError
// when none of them gives a path.
std::string resolve_store_path(const std::string& explicit_path = {});

// The folder a run's own files are kept in, beside its store:
// <store folder>/<store name>.files/run-<id> (runs.sqlite's run 7:
// runs.files/run-7). Deleting the run deletes it.
std::string run_folder(const std::string& store_path, int64_t run);

// The file a run's final weights go to: final.ckpt in its run_folder.
std::string final_weights_path(const std::string& store_path, int64_t run);

}  // namespace tr::store

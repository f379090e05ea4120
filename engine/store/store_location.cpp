// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/store_location.h>

#include <cstdlib>
#include <filesystem>

#include "store/sqlite_db.h"

namespace tr::store {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

std::string resolve_store_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (std::string p = env(kStoreEnvVar); !p.empty()) return p;
  if (std::string xdg = env("XDG_DATA_HOME"); !xdg.empty() && xdg[0] == '/')
    return xdg + "/renaissance/runs.sqlite";
  if (std::string home = env("HOME"); !home.empty())
    return home + "/.local/share/renaissance/runs.sqlite";
  throw StoreError(
      std::string("no place for the run store: HOME is not set; give --store PATH or set ") +
      kStoreEnvVar);
}

std::string run_folder(const std::string& store_path, int64_t run) {
  const std::filesystem::path store(store_path);
  return (store.parent_path() / (store.stem().string() + ".files") / ("run-" + std::to_string(run)))
      .string();
}

std::string final_weights_path(const std::string& store_path, int64_t run) {
  return (std::filesystem::path(run_folder(store_path, run)) / "final.ckpt").string();
}

}  // namespace tr::store

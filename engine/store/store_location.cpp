// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/store_location.h>

#include <cstdlib>

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

}  // namespace tr::store

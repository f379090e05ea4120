// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/sibling_library.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace tr {

std::string path_beside_library(const void* anchor, const std::string& file) {
  Dl_info info{};
  if (dladdr(anchor, &info) != 0 && info.dli_fname && *info.dli_fname) {
    std::error_code ec;
    const std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) return (lib.parent_path() / file).string();
  }
  return file;
}

LibraryEntry open_library_entry(const std::string& path, const char* entry) {
  LibraryEntry e;
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    e.load_error = why ? why : "unknown reason";
    return e;
  }
  e.loaded = true;
  e.entry = dlsym(lib, entry);
  return e;
}

}  // namespace tr

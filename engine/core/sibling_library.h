// SPDX-License-Identifier: GPL-3.0-or-later
// Libraries the engine loads at run time live in the folder of its own
// libraries (build/lib in a build tree, the package's private library folder
// once installed): finding them there and opening one for its entry symbol.
#pragma once

#include <string>

namespace tr {

// `file` in the folder of the loaded library that holds `anchor` (an address
// inside that library); `file` alone when that folder cannot be told.
std::string path_beside_library(const void* anchor, const std::string& file);

// A library opened for its one entry symbol.
struct LibraryEntry {
  bool loaded = false;     // the library and everything it needs loaded
  void* entry = nullptr;   // the entry's address; nullptr when absent
  std::string load_error;  // why it did not load (the loader's words)
};

// Opens `path` with every symbol bound now (a missing library or symbol is
// reported here, once, not as a crash later) and kept local (its symbols
// never stand in for the program's), and looks up `entry`. A library that
// loaded stays loaded: unloading one whose initialisers ran is not safe.
LibraryEntry open_library_entry(const std::string& path, const char* entry);

}  // namespace tr

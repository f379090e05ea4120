// SPDX-License-Identifier: GPL-3.0-or-later
// The seam between the engine and its CUDA backend. The backend is a shared
// library of its own (librenaissance-cuda.so, the only thing that links a
// CUDA library), loaded at run time when first asked for, so the programs
// start on machines without CUDA and one build serves both kinds. The engine
// looks for it beside its own library (or at $RENAISSANCE_CUDA_BACKEND),
// checks that it is the same build, and reaches it through one table.
#pragma once

#include <memory>
#include <string>

#include "backends/cuda_backend_options.h"
#include "core/build_id.h"

namespace tr {

class Backend;
struct DeviceScan;

// Bumped whenever the table's layout or meaning changes.
inline constexpr int kCudaPluginAbi = 1;
inline constexpr const char* kCudaPluginFile = "librenaissance-cuda.so";
// extern "C" const CudaPluginTable* tr_cuda_plugin_entry(): the one symbol
// the engine looks up.
inline constexpr const char* kCudaPluginEntry = "tr_cuda_plugin_entry";

struct CudaPluginTable {
  int abi = 0;                  // kCudaPluginAbi of the backend's build
  const char* build = nullptr;  // engine_build_id() of the backend's build
  void (*scan_devices)(DeviceScan& scan) = nullptr;
  std::unique_ptr<Backend> (*make_backend)(const cuda::CudaBackendOptions& options) = nullptr;
};

// The outcome of looking for the backend: its table, or why there is none.
struct CudaPlugin {
  const CudaPluginTable* table = nullptr;
  std::string path;     // the file looked for
  std::string problem;  // empty exactly when table is set
};

// The process's CUDA backend, looked for once (later calls, from any
// thread, return the same answer). A loaded library stays loaded.
const CudaPlugin& cuda_plugin();

// Tries the library at `path` now: for the look-up above and for tests.
CudaPlugin load_cuda_plugin(const std::string& path);

// $RENAISSANCE_CUDA_BACKEND when set, else kCudaPluginFile in the folder of
// the engine's own library (build/lib in a build tree, the package's
// private library folder once installed).
std::string default_cuda_plugin_path();

}  // namespace tr

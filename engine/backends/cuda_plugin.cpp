// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda_plugin.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/sibling_library.h"

namespace tr {

namespace {

using EntryFn = const CudaPluginTable* (*)();

CudaPlugin refuse(CudaPlugin p, std::string problem) {
  p.table = nullptr;
  p.problem = std::move(problem);
  return p;
}

}  // namespace

std::string default_cuda_plugin_path() {
  if (const char* env = std::getenv("RENAISSANCE_CUDA_BACKEND"); env && *env) return env;
  return path_beside_library(reinterpret_cast<const void*>(&default_cuda_plugin_path),
                             kCudaPluginFile);
}

CudaPlugin load_cuda_plugin(const std::string& path) {
  CudaPlugin p;
  p.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return refuse(p, "no CUDA backend installed (" + path +
                         " is not there: the renaissance-workbench-cuda package installs it, "
                         "and a source build makes it with -DTR_CUDA=ON where nvcc exists)");
  // Bound now: a missing CUDA library or symbol is reported here, once,
  // rather than as a crash in the middle of a step.
  const LibraryEntry lib = open_library_entry(path, kCudaPluginEntry);
  if (!lib.loaded) {
    return refuse(p, "the CUDA backend " + path + " cannot be loaded: " + lib.load_error +
                         " (it needs the CUDA runtime, cuBLAS, cuDNN and NCCL libraries it was "
                         "built with, and a CUDA driver)");
  }
  // A library refused from here on is left loaded: unloading one whose
  // initialisers may have started CUDA's runtime is not safe.
  const auto entry = reinterpret_cast<EntryFn>(lib.entry);
  if (!entry)
    return refuse(p, path + " is not a Renaissance CUDA backend (it has no " +
                         std::string(kCudaPluginEntry) + ")");
  const CudaPluginTable* table = entry();
  if (!table || table->abi != kCudaPluginAbi || !table->build || !table->scan_devices ||
      !table->make_backend)
    return refuse(p, "the CUDA backend " + path + " speaks another interface (version " +
                         std::to_string(table ? table->abi : 0) + ", this engine's is " +
                         std::to_string(kCudaPluginAbi) +
                         "): install the CUDA backend of this very build");
  if (engine_build_id() != table->build)
    return refuse(p, "the CUDA backend " + path + " is from build " + table->build +
                         " and this engine is " + engine_build_id() +
                         ": install the CUDA backend of this very build");
  // The library stays loaded for the life of the process: its backends,
  // kernels and CUDA state outlive any one caller.
  p.table = table;
  return p;
}

const CudaPlugin& cuda_plugin() {
  static const CudaPlugin plugin = load_cuda_plugin(default_cuda_plugin_path());
  return plugin;
}

}  // namespace tr

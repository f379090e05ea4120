// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cuda_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "tr_build_info.h"

namespace tr {

namespace {

using EntryFn = const CudaPluginTable* (*)();

CudaPlugin refuse(CudaPlugin p, std::string problem) {
  p.table = nullptr;
  p.problem = std::move(problem);
  return p;
}

}  // namespace

std::string engine_build_id() {
  return std::string(TR_VERSION) + "+" + TR_GIT_COMMIT;
}

std::string default_cuda_plugin_path() {
  if (const char* env = std::getenv("RENAISSANCE_CUDA_BACKEND"); env && *env) return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&default_cuda_plugin_path), &info) != 0 && info.dli_fname &&
      *info.dli_fname) {
    std::error_code ec;
    const std::filesystem::path lib = std::filesystem::canonical(info.dli_fname, ec);
    if (!ec) return (lib.parent_path() / kCudaPluginFile).string();
  }
  return kCudaPluginFile;
}

CudaPlugin load_cuda_plugin(const std::string& path) {
  CudaPlugin p;
  p.path = path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return refuse(p, "no CUDA backend installed (" + path +
                         " is not there: the renaissance-workbench-cuda package installs it, "
                         "and a source build makes it with -DTR_CUDA=ON where nvcc exists)");
  // RTLD_NOW: a missing CUDA library or symbol is reported here, once,
  // rather than as a crash in the middle of a step.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    return refuse(p, "the CUDA backend " + path +
                         " cannot be loaded: " + (why ? why : "unknown reason") +
                         " (it needs the CUDA runtime, cuBLAS, cuDNN and NCCL libraries it was "
                         "built with, and a CUDA driver)");
  }
  // A library refused from here on is left loaded: unloading one whose
  // initialisers may have started CUDA's runtime is not safe.
  const auto entry = reinterpret_cast<EntryFn>(dlsym(lib, kCudaPluginEntry));
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

// SPDX-License-Identifier: GPL-3.0-or-later
// Loads NCCL once (see nccl_library.h). The loaded state lives for the
// process and is never destroyed: communicators may still be torn down by
// other static destructors at exit.
#include "backends/cuda/nccl_library.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tr::cuda {

namespace {

constexpr const char* kNcclSoname = "libnccl.so.2";

struct LoadedNccl {
  NcclApi api;
  NcclLibraryState state;
};

// The folder of the loaded CUDA runtime: NVIDIA's toolkit ships NCCL there,
// and that folder need not be in the loader's search path.
std::string cudart_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&cudaRuntimeGetVersion), &info) || !info.dli_fname)
    return {};
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string version_text(int v) {
  // NCCL_VERSION: X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
  const int major = v >= 10000 ? v / 10000 : v / 1000;
  const int minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

template <typename Fn>
bool resolve(void* handle, const char* symbol, Fn& fn, NcclLibraryState& state) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (fn) return true;
  state.problem = state.path + " has no " + symbol +
                  " (the backend needs NCCL 2.18 or later: install libnccl2 of CUDA 13)";
  return false;
}

LoadedNccl load() {
  LoadedNccl l;
  void* handle = dlopen(kNcclSoname, RTLD_NOW | RTLD_LOCAL);
  std::string why = handle ? "" : dlerror();
  if (!handle) {
    const std::string beside = cudart_folder();
    if (!beside.empty())
      handle = dlopen((beside + "/" + kNcclSoname).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!handle) {
    l.state.problem = "NCCL cannot be loaded (" + why +
                      "): more than one GPU needs it; install libnccl2 for CUDA 13 or put " +
                      kNcclSoname + " on LD_LIBRARY_PATH";
    return l;
  }
  link_map* map = nullptr;
  char real[PATH_MAX];
  l.state.path = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
                         realpath(map->l_name, real)
                     ? real
                     : kNcclSoname;
  NcclApi& a = l.api;
  NcclLibraryState& s = l.state;
  const bool all = resolve(handle, "ncclGetVersion", a.get_version, s) &&
                   resolve(handle, "ncclGetErrorString", a.error_string, s) &&
                   resolve(handle, "ncclGetUniqueId", a.get_unique_id, s) &&
                   resolve(handle, "ncclCommInitAll", a.comm_init_all, s) &&
                   resolve(handle, "ncclCommInitRank", a.comm_init_rank, s) &&
                   resolve(handle, "ncclCommSplit", a.comm_split, s) &&
                   resolve(handle, "ncclCommDestroy", a.comm_destroy, s) &&
                   resolve(handle, "ncclCommAbort", a.comm_abort, s) &&
                   resolve(handle, "ncclGroupStart", a.group_start, s) &&
                   resolve(handle, "ncclGroupEnd", a.group_end, s) &&
                   resolve(handle, "ncclAllReduce", a.all_reduce, s) &&
                   resolve(handle, "ncclBroadcast", a.broadcast, s) &&
                   resolve(handle, "ncclReduce", a.reduce, s) &&
                   resolve(handle, "ncclAllGather", a.all_gather, s) &&
                   resolve(handle, "ncclReduceScatter", a.reduce_scatter, s);
  if (a.get_version) {
    int v = 0;
    if (a.get_version(&v) == ncclSuccess) s.version = version_text(v);
  }
  (void)all;
  return l;
}

const LoadedNccl& loaded() {
  static const LoadedNccl* const nccl = new LoadedNccl(load());
  return *nccl;
}

}  // namespace

const NcclApi& nccl() {
  const LoadedNccl& l = loaded();
  if (!l.state.problem.empty()) throw std::runtime_error("CUDA backend: " + l.state.problem);
  return l.api;
}

NcclLibraryState nccl_library_state() {
  return loaded().state;
}

}  // namespace tr::cuda

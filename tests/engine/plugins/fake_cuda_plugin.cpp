// SPDX-License-Identifier: GPL-3.0-or-later
// Stand-ins for the CUDA backend's library, to show how the engine's loader
// (backends/cuda_plugin.h) treats each kind of file it may meet. Built four
// ways by tests/CMakeLists.txt:
//   FAKE_NO_ENTRY    a shared library without the entry symbol;
//   FAKE_ABI=N       an entry whose table speaks interface version N;
//   FAKE_BUILD="..." an entry from another build;
//   (none)           a faithful one: one device "Fake device 0" of 1 GiB,
//                    and backends that are CPU backends over as many ranks,
//                    so the engine's CUDA path can be followed here.
#include "backends/cpu/cpu_backend.h"
#include "backends/cuda_plugin.h"
#include "backends/devices.h"
#include "tr_build_info.h"

#ifndef FAKE_NO_ENTRY

#ifndef FAKE_ABI
#define FAKE_ABI tr::kCudaPluginAbi
#endif
#ifndef FAKE_BUILD
#define FAKE_BUILD TR_VERSION "+" TR_GIT_COMMIT
#endif

namespace {

void scan(tr::DeviceScan& s) {
  s.cuda_status = "fake driver";
  tr::CudaDeviceInfo d;
  d.index = 0;
  d.name = "Fake device 0";
  d.memory_bytes = uint64_t{1} << 30;
  d.cc_major = 9;
  s.cuda.push_back(d);
}

std::unique_ptr<tr::Backend> make(const tr::cuda::CudaBackendOptions& o) {
  tr::cpu::CpuBackendOptions c;
  c.world = static_cast<int>(o.devices.size());
  return tr::cpu::make_cpu_backend(c);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const tr::CudaPluginTable*
tr_cuda_plugin_entry() {
  static const tr::CudaPluginTable table{FAKE_ABI, FAKE_BUILD, &scan, &make};
  return &table;
}

#else

extern "C" __attribute__((visibility("default"))) int tr_some_other_library() {
  return 0;
}

#endif

// SPDX-License-Identifier: GPL-3.0-or-later
// The one symbol the engine looks up in this library (backends/cuda_plugin.h):
// the table through which it scans devices and makes CUDA backends.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda_plugin.h"
#include "tr_build_info.h"

extern "C" __attribute__((visibility("default"))) const tr::CudaPluginTable*
tr_cuda_plugin_entry() {
  static const tr::CudaPluginTable table{
      tr::kCudaPluginAbi,
      TR_VERSION "+" TR_GIT_COMMIT,
      &tr::scan_cuda_devices,
      &tr::cuda::make_cuda_backend,
  };
  return &table;
}

// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA libraries the backend runs on, as the loader resolved them: each
// one's version and file, so a run's report shows which cuDNN it used (a
// Python wheel's copy can shadow the system's) and whether NCCL is there for
// more than one GPU. None of this needs a device.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <library_types.h>

#include <climits>
#include <cstdlib>
#include <string>

#include <renaissance/devices.h>
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_library.h"

namespace tr {

namespace {

// The file that holds `symbol`, with links resolved (libcudnn.so.9 ->
// libcudnn.so.9.19.0), or empty.
std::string file_of(const void* symbol) {
  Dl_info info{};
  if (!dladdr(symbol, &info) || !info.dli_fname) return {};
  char real[PATH_MAX];
  return realpath(info.dli_fname, real) ? std::string(real) : std::string(info.dli_fname);
}

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

void scan_cuda_libraries(DeviceScan& scan) {
  int runtime = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  scan.cuda_libraries.push_back(
      {"CUDA runtime", dotted(runtime / 1000, runtime % 1000 / 10, runtime % 10),
       file_of(reinterpret_cast<const void*>(&cudaRuntimeGetVersion)), ""});
  int major = 0, minor = 0, patch = 0;
  (void)cublasGetProperty(MAJOR_VERSION, &major);
  (void)cublasGetProperty(MINOR_VERSION, &minor);
  (void)cublasGetProperty(PATCH_LEVEL, &patch);
  scan.cuda_libraries.push_back({"cuBLAS", dotted(major, minor, patch),
                                 file_of(reinterpret_cast<const void*>(&cublasGetProperty)), ""});
  // cuDNN 9: major * 10000 + minor * 100 + patch.
  const auto cudnn = static_cast<int>(cudnnGetVersion());
  scan.cuda_libraries.push_back({"cuDNN", dotted(cudnn / 10000, cudnn % 10000 / 100, cudnn % 100),
                                 file_of(reinterpret_cast<const void*>(&cudnnGetVersion)), ""});
  const cuda::NcclLibraryState nccl = cuda::nccl_library_state();
  scan.cuda_libraries.push_back({"NCCL", nccl.version, nccl.path, nccl.problem});
}

}  // namespace tr

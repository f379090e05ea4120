// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA device discovery through the runtime API. Without a driver (as on
// build machines) cudaGetDeviceCount fails cleanly and we say why.
#include <cuda_runtime_api.h>

#include <string>

#include <renaissance/devices.h>
#include "backends/cuda/cuda_backend.h"

namespace tr {

void scan_cuda_devices(DeviceScan& scan) {
  scan_cuda_libraries(scan);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    scan.cuda_status = std::string("no CUDA device: ") + cudaGetErrorString(err) + " (" +
                       cudaGetErrorName(err) + ")";
    return;
  }
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  scan.cuda_status = "driver " + std::to_string(driver / 1000) + "." +
                     std::to_string(driver % 1000 / 10) + ", runtime " +
                     std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  if (count == 0)
    scan.cuda_status = "no CUDA device: the driver reports none (" + scan.cuda_status + ")";
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.memory_bytes = prop.totalGlobalMem;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    scan.cuda.push_back(d);
  }
}

}  // namespace tr

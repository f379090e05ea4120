// SPDX-License-Identifier: GPL-3.0-or-later
// Error checking for CUDA runtime and NCCL calls: a failed call becomes a
// std::runtime_error that names the call, the device and the library's own
// message, so a failure on rank 3 of 8 says where it happened.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "backends/cuda/nccl_library.h"

namespace tr::cuda {

inline std::string device_text(int device) {
  return device < 0 ? std::string("(no device)") : "on device " + std::to_string(device);
}

inline void check_cuda(cudaError_t err, const char* call, int device) {
  if (err == cudaSuccess) return;
  // Clear a non-sticky error, or the next launch check would report it again.
  (void)cudaGetLastError();
  throw std::runtime_error(std::string("CUDA error in ") + call + " " + device_text(device) + ": " +
                           cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

// A result comes from a call through nccl(), so NCCL is loaded here.
inline void check_nccl(ncclResult_t res, const char* call, int device) {
  if (res == ncclSuccess) return;
  throw std::runtime_error(std::string("NCCL error in ") + call + " " + device_text(device) + ": " +
                           nccl().error_string(res));
}

// The device this thread currently works on, for messages; -1 when unknown.
inline int current_device() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) return -1;
  return d;
}

}  // namespace tr::cuda

// Macros only to spell the failing call in the message.
#define TR_CUDA_CHECK(call, device) ::tr::cuda::check_cuda((call), #call, (device))
#define TR_NCCL_CHECK(call, device) ::tr::cuda::check_nccl((call), #call, (device))

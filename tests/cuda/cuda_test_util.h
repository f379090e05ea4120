// SPDX-License-Identifier: GPL-3.0-or-later
// Test helper for the CUDA tests: every test function first checks for a
// device and skips with the driver's reason when there is none, so the tests
// build and report skips on machines without a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace tr::test {

// Empty when a CUDA device is usable, otherwise why not.
inline std::string no_cuda_device_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(err) + " (" +
           cudaGetErrorName(err) + ")";
  }
  if (count == 0) return "no CUDA device: the driver reports none";
  return {};
}

inline int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

}  // namespace tr::test

// A macro because QSKIP must return from the test function itself.
#define TR_REQUIRE_CUDA_DEVICE()                                     \
  do {                                                               \
    const std::string tr_why_ = ::tr::test::no_cuda_device_reason(); \
    if (!tr_why_.empty()) QSKIP(tr_why_.c_str());                    \
  } while (0)

// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend: the Backend interface on local NVIDIA devices, one rank a
// device. Per rank five non-blocking streams, one cudaMalloc'd arena, events,
// CUDA Graphs from stream capture, NCCL communicators from ncclCommInitAll.
// Not yet selectable by users: most compute ops have no CUDA kernel yet.
#pragma once

#include <memory>
#include <vector>

#include "runtime/backend.h"

namespace tr::cuda {

struct CudaBackendOptions {
  std::vector<int> devices{0};  // rank r runs on devices[r]
  bool profiling = false;       // same as set_profiling(true) right after creation
};

// Throws std::runtime_error when a device is missing or CUDA/NCCL fail to start,
// std::invalid_argument for an empty or repeating device list.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend: the Backend interface on local NVIDIA devices, one rank a
// device. Per rank five non-blocking streams, one cudaMalloc'd arena, events,
// CUDA Graphs from stream capture, NCCL communicators from ncclCommInitAll;
// across machines (one process a node) from ncclCommInitRank, with the
// unique id passed through the TCP rendezvous (net/tcp_rendezvous.h).
#pragma once

#include <memory>
#include "backends/cuda_backend_options.h"
#include "runtime/backend.h"

namespace tr::cuda {

// Throws std::runtime_error when a device is missing or CUDA/NCCL fail to start,
// std::invalid_argument for an empty or repeating device list,
// net::RendezvousError when the nodes do not meet or do not agree.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace tr::cuda

namespace tr {
struct DeviceScan;
// Fills scan.cuda, scan.cuda_status and scan.cuda_libraries from the CUDA runtime.
void scan_cuda_devices(DeviceScan& scan);
// Fills scan.cuda_libraries: each CUDA library's version and file (cuda_libraries.cpp).
void scan_cuda_libraries(DeviceScan& scan);
}  // namespace tr

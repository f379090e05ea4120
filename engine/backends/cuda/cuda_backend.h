// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend: the Backend interface on local NVIDIA devices, one rank a
// device. Per rank five non-blocking streams, one cudaMalloc'd arena, events,
// CUDA Graphs from stream capture, NCCL communicators from ncclCommInitAll;
// across machines (one process a node) from ncclCommInitRank, with the
// unique id passed through the TCP rendezvous (net/tcp_rendezvous.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "net/multi_node.h"
#include "runtime/backend.h"

namespace tr::cuda {

struct CudaBackendOptions {
  std::vector<int> devices{0};  // rank r runs on devices[r]
  bool profiling = false;       // same as set_profiling(true) right after creation
  // More than one node: this process's devices are the ranks from its
  // node's first global rank on, of a world over every node.
  MultiNodeOptions nodes;
  std::string fingerprint;  // across nodes: every node's must match (plan_fingerprint)
  // For measurements (the device check's "five streams vs one", "captured
  // vs uncaptured"); training results are the same either way:
  // 1 runs every StreamKind on one CUDA stream, so nothing overlaps;
  int streams = 5;
  // false records each "captured" graph as a list of launches and replays
  // it by launching them one by one, as a framework without graphs would.
  bool capture = true;
  // The plan uses SyncBatchNorm: a second communicator for the BN layers'
  // in-graph sums (only with more than one rank in the world).
  bool sync_batch_norm = false;
};

// Throws std::runtime_error when a device is missing or CUDA/NCCL fail to start,
// std::invalid_argument for an empty or repeating device list,
// net::RendezvousError when the nodes do not meet or do not agree.
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& options);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// What a CUDA backend is made with: the devices, and the measuring modes.
// Engine-side (no CUDA headers), because the engine hands it across to the
// CUDA backend's library (backends/cuda_plugin.h).
#pragma once

#include <string>
#include <vector>

#include <renaissance/multi_node_options.h>

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
  // Convolutions keep to deterministic cuDNN algorithms (conv_launchers.h:
  // ConvAlgorithms::DETERMINISTIC) rather than the fastest measured.
  bool deterministic_conv = false;
  // The plan uses SyncBatchNorm: a second communicator for the BN layers'
  // in-graph sums (only with more than one rank in the world).
  bool sync_batch_norm = false;
  // The device mesh's tensor dimension: consecutive groups of this many
  // ranks get a tensor-parallel communicator and the ranks of one tensor
  // index a data-parallel one, both split from the world's.
  int tensor = 1;
};

}  // namespace tr::cuda

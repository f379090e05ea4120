// SPDX-License-Identifier: GPL-3.0-or-later
// NCCL, loaded at run time (libnccl.so.2) the first time a world of more than
// one rank needs it. The backend's library links no NCCL, so one GPU trains
// where NCCL is missing (it is in neither the CUDA toolkit nor the driver),
// and a device-check bundle that leaves NCCL out still loads.
#pragma once

#include <nccl.h>

#include <string>

namespace tr::cuda {

// The NCCL functions the backend calls, resolved from the loaded library.
struct NcclApi {
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommInitRank) comm_init_rank = nullptr;
  decltype(&ncclCommSplit) comm_split = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclCommAbort) comm_abort = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclReduceScatter) reduce_scatter = nullptr;
};

// NCCL, loaded at the first call; throws std::runtime_error naming the
// library, why it could not be used and what to install.
const NcclApi& nccl();

// Where NCCL was found and its version, or why it cannot be loaded; never
// throws (the device scan reports it beside the other CUDA libraries).
struct NcclLibraryState {
  std::string path;     // as the loader resolved it
  std::string version;  // "2.28.9"
  std::string problem;  // empty when loaded
};
NcclLibraryState nccl_library_state();

}  // namespace tr::cuda

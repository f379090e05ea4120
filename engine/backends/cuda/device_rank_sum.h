// SPDX-License-Identifier: GPL-3.0-or-later
// The RankSum of the CUDA backend: SyncBatchNorm's sums across ranks queued
// on a stream over device memory (an NCCL all-reduce), where the CPU
// backend's RankSum sums host memory at once. The backend binds one per rank
// to the BN training launches; the BN launchers hand it to the kernels.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>

#include "runtime/kernel_args.h"

namespace tr::cuda {

class DeviceRankSum : public RankSum {
 public:
  // Host memory cannot be summed here: the CUDA kernels use enqueue_sum.
  void sum(float* data, uint64_t count) const override {
    (void)data;
    (void)count;
    throw std::logic_error("CUDA backend: SyncBatchNorm sums device memory (enqueue_sum)");
  }
  // Sums `count` floats at `data` across every rank, in place, after the work
  // already queued on `stream` (or captured into its graph).
  virtual void enqueue_sum(float* data, uint64_t count, cudaStream_t stream) const = 0;
};

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// KernelArgs: everything one kernel launch needs, with every DTensor already
// resolved to a pointer in the rank's arena. The runtime builds these once per
// captured node (the hot path only reads them); each backend maps a ComputeOp
// or RangeOp to its own kernel that takes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/dtensor.h>
#include "compile/computation_graph.h"
#include "compile/node_params.h"
#include "compile/scalar_slot.h"

namespace tr {

struct TensorArg {
  void* data = nullptr;
  const DTensor* desc = nullptr;  // shape, dtype, strides of the current variant

  float* f32() const { return static_cast<float*>(data); }
  int32_t* i32() const { return static_cast<int32_t*>(data); }
  int8_t* i8() const { return static_cast<int8_t*>(data); }
  const Shape& shape() const { return desc->shape; }
};

// A span of regions, resolved: the bytes and the DTensors inside, in address order.
struct SpanArg {
  void* data = nullptr;
  uint64_t bytes = 0;
  std::vector<const DTensor*> tensors;
  uint64_t offset = 0;  // arena offset of `data`, to find a tensor's place in the span

  float* f32() const { return static_cast<float*>(data); }
  uint64_t floats() const { return bytes / 4; }
  // Pointer to `t` (which lies in this span) inside the span.
  float* f32_at(const DTensor& t) const {
    return reinterpret_cast<float*>(static_cast<uint8_t*>(data) + (t.offset - offset));
  }
};

// Scratch memory of the stream a launch runs on (each stream has its own, as
// each CUDA stream has its own cuDNN workspace). The backend owns it and sizes
// it at capture to the largest need of the kernels on that stream; kernels
// read it at run time (the CPU's FP16 kernels stage FP32 copies there).
struct StreamWorkspace {
  void* data = nullptr;
  uint64_t bytes = 0;
};

// Sums floats across every rank, in place, from inside a kernel: the CPU
// backend's SyncBatchNorm reduces its statistics this way between its two
// passes (a CUDA backend splits the op around an NCCL all-reduce instead).
// The backend binds it to the launches that need it.
class RankSum {
 public:
  virtual ~RankSum() = default;
  virtual void sum(float* data, uint64_t count) const = 0;
};

struct KernelArgs {
  const GraphNode* node = nullptr;
  // The node's resolved settings (GraphNode::params) and the run's
  // constants; null reads the defaults (params(), constants()).
  const NodeParams* layer_params = nullptr;
  const TrainingConstants* training = nullptr;
  std::vector<TensorArg> in, out;
  std::vector<SpanArg> in_spans, out_spans;
  float* scalars = nullptr;  // S_SCALARS of this rank, indexed by ScalarSlot
  uint64_t seed = 0;         // project seed, for dropout masks
  // The rank's place among the ranks that split the batch (the dropout
  // streams, ZeRO's shares): its place in the world, but for a
  // tensor-parallel layer's launches, which compute the samples of its
  // tensor group: its data-parallel group's place then.
  int rank = 0;
  int world = 1;
  // A launch over some of the rank's samples (the CPU's 16-bit staging runs a
  // few at a time): its first sample, and the rank's whole batch. Masks drawn
  // per sample number the global batch by them.
  int64_t first_sample = 0;
  int64_t rank_batch = 0;  // 0: the launch's own batch, all of the rank's samples
  // For forked backward ops: which part to run; -1 runs every part.
  int part = -1;
  const StreamWorkspace* workspace = nullptr;  // null when the kernel needs none
  // Bound for the BN training ops when training.sync_batch_norm and world > 1.
  const RankSum* rank_sum = nullptr;

  bool accumulate(size_t out_index) const {
    return node && (node->accumulate_mask >> out_index) & 1u;
  }
  bool runs(BwdPart p) const { return part < 0 || part == static_cast<int>(p); }
  const NodeParams& params() const {
    static const NodeParams defaults;
    return layer_params ? *layer_params : defaults;
  }
  const TrainingConstants& constants() const {
    static const TrainingConstants defaults;
    return training ? *training : defaults;
  }
  // " of layer 'conv1' (Conv2d)", or nothing for engine work: for messages.
  std::string where() const {
    return layer_params && !layer_params->label.empty() ? " of layer " + layer_params->label : "";
  }
  float scalar(ScalarSlot s) const { return scalars[static_cast<int>(s)]; }
  // Sample n of this launch in the global batch, the launch's batch being `n_launch`.
  int64_t global_sample(int64_t n, int64_t n_launch) const {
    return rank * (rank_batch > 0 ? rank_batch : n_launch) + first_sample + n;
  }
};

}  // namespace tr

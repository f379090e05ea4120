// SPDX-License-Identifier: GPL-3.0-or-later
// The compiler: project -> per-variant MemoryPlans (one blueprint, the same
// offsets in every variant) plus ComputationGraphs grouped by GraphId.
// Phase 1 resolves the variants and infers shapes for each, phase 2
// allocates every tensor through the same semantic calls per variant and
// unifies the slots that keep one offset, phase 3 emits the graphs, phase 4
// places the step-local tensors of each variant by their lifetimes and lays
// the plans out.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/compiled_plan.h>

#include <renaissance/memory_plan.h>
#include <renaissance/project.h>
#include <renaissance/shape_inference.h>
#include "compile/computation_graph.h"
#include "compile/node_params.h"
#include "compile/scalar_slot.h"
#include "compile/tensor_parallel.h"

namespace tr {

// Where a model node's tensors live. Parameter ids are per series (W, E, A,
// G, H, M, V); kNoTensor where the series is not used by this project.
struct LayerTensors {
  DTensorId out = kNoTensor;   // output feature
  DTensorId grad = kNoTensor;  // gradient of the output feature
  std::array<DTensorId, 7> weight{kNoTensor, kNoTensor, kNoTensor, kNoTensor,
                                  kNoTensor, kNoTensor, kNoTensor};
  std::array<DTensorId, 7> bias{kNoTensor, kNoTensor, kNoTensor, kNoTensor,
                                kNoTensor, kNoTensor, kNoTensor};
  DTensorId lars_norm = kNoTensor;
  // BatchNorm2d
  DTensorId prev_mean = kNoTensor, prev_var = kNoTensor, next_mean = kNoTensor,
            next_var = kNoTensor, eq_scale = kNoTensor, eq_bias = kNoTensor, saved = kNoTensor;
  DTensorId mask = kNoTensor;  // Dropout's mask; MaxPool2d's maxima's positions (pool_where)
  // Fusion and in-place gradients (see CompileOptions).
  int fused_relu = -1;  // BatchNorm2d or Add: the ReLU node computed by this layer's kernels
  int fused_into = -1;  // ReLU: the BatchNorm2d or Add node that computes it (it runs no kernel)
  bool grad_in_place = false;  // `grad` is `out`: the consumer's dX overwrites the feature
  // The output computed again in the backward (CompileOptions::recompute):
  // what its consumers' backwards read instead of `out`.
  DTensorId recomputed = kNoTensor;
  // Sequence parallel, over the tensor group's batch: a column layer's input
  // gathered for its forward and again for its backward, and its input
  // gradient before the reduce-scatter; a row layer's partial products
  // before theirs, and its output gradient gathered.
  DTensorId gathered = kNoTensor, gathered_again = kNoTensor, input_grad_part = kNoTensor;
  DTensorId partial = kNoTensor, grad_gathered = kNoTensor;

  DTensorId weight_in(ParamSeries s) const { return weight[static_cast<size_t>(s)]; }
  DTensorId bias_in(ParamSeries s) const { return bias[static_cast<size_t>(s)]; }
};

// Engine-owned tensors every project has.
struct EngineTensors {
  DTensorId scalars = kNoTensor;  // see ScalarSlot
  DTensorId result = kNoTensor;
  DTensorId result_accumulated = kNoTensor;
  DTensorId confusion = kNoTensor;               // validation: counts per (true, predicted) class
  DTensorId input[2] = {kNoTensor, kNoTensor};   // A, B
  DTensorId labels[2] = {kNoTensor, kNoTensor};  // A, B
  DTensorId active_labels = kNoTensor;           // copy of the labels of the buffer in use
  // ZeRO-1: this rank's share of each gradient bucket's optimizer moments
  // (plan/gradient_buckets.h), in the M and V regions of the bucket's first kind.
  DTensorId m_shard[2] = {kNoTensor, kNoTensor};
  DTensorId v_shard[2] = {kNoTensor, kNoTensor};
  // ZeRO-2: this rank's share of each bucket's summed gradients, in the Q
  // region of the bucket's first kind.
  DTensorId g_shard[2] = {kNoTensor, kNoTensor};
};

struct CompiledProject {
  Project design;   // as the user wrote it (overrides applied): checkpoints and runs keep this
  Project project;  // as compiled: the design with composite layers' parts in their place
  CompileOptions options;
  ModelAnalysis analysis;  // of the train variant
  std::vector<ResolvedVariant> variants;
  std::vector<MemoryPlan> plans;   // one per variant, same index
  std::vector<PoolSummary> pools;  // per variant when packed, else empty
  std::vector<ComputationGraph> graphs;
  TrainingConstants constants;       // what every graph's kernels read of the training settings
  std::vector<LayerTensors> layers;  // per model node
  EngineTensors engine;
  int world_size = 1;
  // training.sharding "optimizer" on more than one rank: the moments are the
  // engine's shards (EngineTensors::m_shard), the optimizer updates this
  // rank's share of each bucket and WEIGHT_GATHER hands it to the others.
  bool sharded_optimizer = false;
  // training.sharding "optimizer+gradients" on more than one rank (ZeRO-2):
  // sharded_optimizer too, and each bucket's reduce-scatter leaves this rank
  // its share of the sum (EngineTensors::g_shard), which the optimizer
  // reads; the full gradients live in the step-local pool until then where
  // that makes the plan smaller (MemoryPlan::gradients_in_pool).
  bool sharded_gradients = false;
  // The device mesh's tensor dimension (training.mesh.tensor): consecutive
  // groups of this many ranks split the layers in `splits`, computing them
  // for the group's samples, and the other layers each for its own
  // (sequence parallel); `project` is what one tensor rank computes.
  int tensor_ranks = 1;
  std::vector<LayerSplit> splits;  // per model node; every one Whole without tensor parallel
  // The project's validation batch a device, where the validation variant
  // runs it as smaller micro-batches (CompileOptions::validation_micro_batch);
  // 0 when it runs as written.
  int64_t validation_batch_written = 0;
  // Saved features that may be computed again in the backward, cheapest
  // per byte first, and those that are (CompileOptions::memory_budget).
  std::vector<RecomputeChoice> recompute_candidates;
  std::vector<RecomputeChoice> recomputed;
  // The mesh's `data` dimension: the groups whose gradients are averaged.
  int data_ranks() const noexcept { return world_size / tensor_ranks; }

  // The arena: the largest variant's bytes.
  uint64_t bytes_per_device() const noexcept;
  int variant_index(VariantKind kind) const noexcept;  // -1 when absent
  // The graph to run for `id` in `variant` (a shared one if the id is shape-invariant).
  const ComputationGraph* find_graph(GraphId id, int variant) const noexcept;
};

// A MaxPool2d that keeps where its maxima were (CompileOptions::pool_where).
inline bool is_pool_where(const CompiledProject& cp, int layer) {
  return cp.project.model.nodes[static_cast<size_t>(layer)].type == LayerType::MaxPool2d &&
         cp.layers[static_cast<size_t>(layer)].mask != kNoTensor;
}

// Throws ProjectError (the model or a variant is invalid).
CompiledProject compile_project(const Project& project, const CompileOptions& options = {});

// What rank `rank`'s share of gradient bucket `bucket` (0 first, 1 deep)
// holds under sharding: the weights' element runs its shards keep.
std::vector<ShareSlice> bucket_share(const CompiledProject& cp, int bucket, int rank);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// CompiledPlan: a project compiled for its devices, as the front ends see it:
// its variants, each variant's MemoryPlan and step-local pool, the model's
// analysis and what each graph node is. A cheap, shared handle on the
// engine's compiled program, which stays opaque here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/graph_id.h>
#include <renaissance/memory_plan.h>
#include <renaissance/project.h>
#include <renaissance/shape_inference.h>

namespace tr {

struct CompiledProject;  // the engine's compiled program

// Memory-saving rewrites the compiler applies where they are safe. All are
// on by default; switching them off gives the plain one-kernel-per-layer,
// one-slot-per-gradient program (for comparison and for tests).
struct CompileOptions {
  // BatchNorm2d whose only consumer is a ReLU: one fused kernel each way; the
  // BN output (and its gradient slot) is never allocated.
  bool fuse_bn_relu = true;
  // A conv or FC layer (not the first) that is the only reader of its input
  // writes the input's gradient over the input itself (ENGINE.md §4: dX after
  // dW has read X), when the input's producer does not need its own output in
  // its backward. That feature then has no separate gradient slot.
  bool in_place_dx = true;
  // Step-local tensors (features, gradient slots, scratch) share bytes where
  // their lifetimes over the step do not overlap, placed per variant
  // (MemoryPlan's pool). Off: every tensor its own bytes, one offset per id
  // in every variant (the plan before lifetimes, for comparison).
  bool pack_memory = true;
  // Add whose only consumer is a ReLU (a residual join): one fused kernel
  // each way, the sum never stored; its backward reads the ReLU's output
  // for the mask, so that output takes no in-place gradient.
  bool fuse_add_relu = true;
  // A LayerNorm or activation (GELU, SiLU, ...) whose output only weighted
  // layers (Conv2d, Linear, TokenLinear) read runs its forward again in the
  // backward, just before the first of those backwards that needs it: its
  // output then lives through the forward only, and the copy the backward
  // reads for a short while. A transformer block's two largest saved
  // features (the normalised tokens and the MLP's hidden layer) go; the
  // kernels are elementwise or per token (about 8% of a tiny ViT's CPU
  // step, docs/memory-plan.md). The
  // copy is computed by the same kernel from the same input: the training
  // is bit for bit the same.
  bool recompute = true;
  // With `recompute`, also the matrix products (TokenLinear, Conv2d) whose
  // outputs only attention, the layers above and other matrix products read,
  // from inputs kept or recomputed as above: a transformer block's queries,
  // keys and values and its MLP's hidden layer before the GELU. A ViT keeps
  // 3 token maps a block instead of 10 for about a fifth more compute
  // (activation checkpointing that stops at the residual stream, so nothing
  // is computed more than twice). Off by default; bit for bit the same
  // training.
  bool recompute_matmuls = false;
  // ZeRO-2's full gradients (training.sharding "optimizer+gradients"): in
  // the step-local pool until their reduce-scatter, in bytes of their own,
  // or (Auto) whichever gives the smaller plan.
  enum class GradientPlace : uint8_t { Auto, Pool, Own };
  GradientPlace gradient_place = GradientPlace::Auto;
  // Validation is independent per sample: its batch runs as micro-batches
  // of this many samples a device, accumulating the same metrics. 0 (Fit):
  // the largest, up to the project's validation batch, whose forward fits
  // in the bytes training needs anyway, among those whose batches cover
  // the validation set; kAsWritten: the project's validation batch.
  static constexpr int64_t kAsWritten = -1;
  int64_t validation_micro_batch = 0;
  // Bytes one device's arena may take (0: no budget). A plan over it also
  // drops saved features the backward reads and computes them again there
  // (a batch norm's output, with its fused ReLU's; a convolution's that
  // batch norms read), the cheapest per byte first, as few as make it fit; when even all of them do
  // not, the plan recomputes them all and stays over the budget (CompiledPlan says so). Without a
  // budget the plan recomputes none of them: as fast as before.
  uint64_t memory_budget = 0;
  // The layers (ids, as compiled) whose outputs are recomputed beyond
  // `recompute`'s own: the budget's choice, or one pinned by hand. Each must
  // be a candidate (CompiledPlan::recompute_candidates), else ProjectError.
  std::vector<std::string> recompute_layers{};
  // A MaxPool2d whose input nothing else keeps for the backward (the output
  // of a convolution or a batch norm, its ReLU's, read by the pool alone)
  // keeps where each window's maximum was, one byte an output, instead of
  // its input; its backward routes from those (the same bits), and its
  // output, no longer read there, may take the next layer's dX in place.
  // (Last: aggregate initialisers of the fields above stay as they were.)
  bool pool_where = true;
  // CPU plans: feature maps (and pooling masks) of whole blocks of this many
  // channels lie as [N, C/b, H, W, b] where every op touching them takes it
  // (DTensor::channel_block), the layout oneDNN's direct convolutions run
  // fastest on (bench_conv_layouts): the CPU's block, cpu_channel_block()
  // (renaissance/devices.h), 8 for AVX2, 16 for AVX-512. 0: NHWC throughout,
  // the default until the gain holds in whole steps (docs/memory-plan.md).
  // Convolutions are oneDNN's kernels for the layout: the same values within
  // rounding, not always the same bits.
  int channel_block = 0;
};

// A saved feature the planner may drop and compute again in the backward.
struct RecomputeChoice {
  std::string layer;        // the layer whose forward runs again ("s1b1_bn1")
  uint64_t bytes = 0;       // its output's slot in the training variant
  int64_t extra_flops = 0;  // that forward's FLOPs, once more a step
};

struct ResolvedVariant {
  std::string name;
  VariantKind kind = VariantKind::Train;
  int64_t batch = 0;  // per device
  int64_t height = 0, width = 0;
};

// How a variant's step-local pool came out (packed plans only).
struct PoolSummary {
  uint64_t slot_bytes = 0;       // the tensors in use, each in its own slot
  uint64_t packed_bytes = 0;     // the pool
  uint64_t peak_live_bytes = 0;  // the most slot bytes live at one point: the floor
  int peak_position = -1;        // where, in the step's node order (first such)
  PackingStrategy strategy = PackingStrategy::GREEDY_BY_SIZE;
};

// What a graph node is, for a profile span or a trace that names it.
struct PlanNode {
  std::string op;           // its compute or range op: "CONV_BWD", "AXPY"
  int layer = -1;           // the model node it works for; -1: engine work
  bool input_copy = false;  // the batch's copy to the device (profiles label it "H2D")
  // A collective's: the bytes each rank puts into it, and the regions they
  // are ("G_DEEP_CONV..R_RESULT": the deep bucket's gradients and the result).
  uint64_t collective_bytes = 0;
  std::string collective_regions;
  // What the collective carries and why, in words: "the gradients of 35
  // weights of 16 layers (s1b1_conv1 .. s4b3_conv3)", "the overflow flag, so
  // that every rank skips an overflowed step".
  std::string collective_cause;
};

// What one rank's share of a sharded tensor (placement S(0)) holds: a run
// of one parameter's elements.
struct ShareSlice {
  std::string parameter;         // the weight's name: "conv1.weight"
  int owner = -1;                // the model node it belongs to
  int64_t first = 0, count = 0;  // elements first .. first + count - 1 of its
  int64_t elements = 0;          // of this many
};

// "conv1.weight", or "conv1.weight[0:512]" for part of it.
std::string share_slice_text(const ShareSlice& s);

class CompiledPlan {
 public:
  CompiledPlan() = default;
  explicit CompiledPlan(std::shared_ptr<const CompiledProject> program) noexcept;

  bool empty() const noexcept { return !program_; }

  // All but empty() need a plan (not empty()).
  // As compiled (overrides applied): a composite layer's parts stand in its
  // place, and every layer index (PlanNode, a DTensor's owner) is into this
  // project's nodes; LayerNode::design_id() names the design's node.
  const Project& project() const;
  const Project& design() const;  // as the user wrote it (overrides applied)
  const CompileOptions& options() const;
  const ModelAnalysis& analysis() const;  // of the train variant
  const std::vector<ResolvedVariant>& variants() const;
  // The project's validation batch a device where the validation variant
  // runs it in micro-batches of its own batch (validation_micro_batch); 0
  // when it runs as written.
  int64_t validation_batch_written() const;
  // What the planner may recompute, cheapest per byte first, and what it
  // chose (CompileOptions::memory_budget or recompute_layers), in that order.
  const std::vector<RecomputeChoice>& recompute_candidates() const;
  const std::vector<RecomputeChoice>& recomputed() const;
  // The budget compiled for (0: none), and whether the plan fits it.
  uint64_t memory_budget() const;
  bool fits_budget() const;
  const std::vector<MemoryPlan>& plans() const;   // one per variant, same index
  const std::vector<PoolSummary>& pools() const;  // per variant when packed, else empty
  int world_size() const;
  // The device mesh's tensor dimension (1: data parallel only), and its
  // data dimension: the ranks that split the batch.
  int tensor_ranks() const;
  int data_ranks() const;
  // The whole model's forward FLOPs for one data rank's training batch
  // (under tensor parallel its tensor ranks' together; analysis() is one
  // rank's share).
  int64_t model_flops() const;
  // How layer `layer` splits over the tensor ranks: "whole" (every tensor
  // rank all of it), "column" (its share of the outputs), "local" (its
  // share of the channels or heads), "row" (its share of the inputs).
  std::string_view tensor_split(int layer) const;
  // The whole tensor a tensor rank holds its part of (DTensor::tensor_placement);
  // the tensor's own shape when it is not split.
  Shape whole_shape(DTensorId id) const;
  uint64_t bytes_per_device() const;                   // the arena: the largest variant's bytes
  int variant_index(VariantKind kind) const noexcept;  // -1 when absent (or empty)
  size_t graph_count() const;  // the ComputationGraphs, all variants together
  // Node `node` of graph `graph` as `variant` runs it; nullopt when there is none.
  std::optional<PlanNode> node(GraphId graph, int variant, int node) const;
  // Which parameters' optimizer state (or, under ZeRO-2, summed gradients)
  // the share of sharded tensor `id` on `rank` holds, in order; empty for a
  // tensor that is not one of the shards, or a rank past the bucket's end.
  std::vector<ShareSlice> rank_share(DTensorId id, int rank) const;

  // The engine's program, for the engine's own code.
  const CompiledProject& program() const { return *program_; }
  const std::shared_ptr<const CompiledProject>& shared_program() const noexcept { return program_; }

 private:
  std::shared_ptr<const CompiledProject> program_;
};

// Throws ProjectError (the model or a variant is invalid).
CompiledPlan compile_plan(const Project& project, const CompileOptions& options = {});

}  // namespace tr

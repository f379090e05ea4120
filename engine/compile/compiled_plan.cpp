// SPDX-License-Identifier: GPL-3.0-or-later
// The front ends' handle on a compiled program (renaissance/compiled_plan.h).
#include <renaissance/compiled_plan.h>

#include <algorithm>
#include <utility>

#include "compile/compiler.h"
#include "compile/ops.h"
#include "plan/gradient_buckets.h"
#include "plan/tensor_shards.h"

namespace tr {

CompiledPlan::CompiledPlan(std::shared_ptr<const CompiledProject> program) noexcept
    : program_(std::move(program)) {}

const Project& CompiledPlan::project() const {
  return program_->project;
}
const Project& CompiledPlan::design() const {
  return program_->design;
}
const CompileOptions& CompiledPlan::options() const {
  return program_->options;
}
const ModelAnalysis& CompiledPlan::analysis() const {
  return program_->analysis;
}
const std::vector<ResolvedVariant>& CompiledPlan::variants() const {
  return program_->variants;
}
int64_t CompiledPlan::validation_batch_written() const {
  return program_->validation_batch_written;
}
const std::vector<RecomputeChoice>& CompiledPlan::recompute_candidates() const {
  return program_->recompute_candidates;
}
const std::vector<RecomputeChoice>& CompiledPlan::recomputed() const {
  return program_->recomputed;
}
uint64_t CompiledPlan::memory_budget() const {
  return program_->options.memory_budget;
}
bool CompiledPlan::fits_budget() const {
  return memory_budget() == 0 || bytes_per_device() <= memory_budget();
}
const std::vector<MemoryPlan>& CompiledPlan::plans() const {
  return program_->plans;
}
const std::vector<PoolSummary>& CompiledPlan::pools() const {
  return program_->pools;
}
int CompiledPlan::world_size() const {
  return program_->world_size;
}
int CompiledPlan::tensor_ranks() const {
  return program_->tensor_ranks;
}
int CompiledPlan::data_ranks() const {
  return program_->data_ranks();
}
int64_t CompiledPlan::model_flops() const {
  if (program_->tensor_ranks == 1) return program_->analysis.total_flops;
  const ResolvedVariant& train =
      program_->variants.at(static_cast<size_t>(program_->variant_index(VariantKind::Train)));
  return analyze_model(program_->design, train.batch).total_flops;
}
Shape CompiledPlan::whole_shape(DTensorId id) const {
  return tr::whole_shape(program_->plans.front().get_dtensor(id), program_->tensor_ranks);
}
std::string_view CompiledPlan::tensor_split(int layer) const {
  const auto& s = program_->splits;
  return tensor_split_name(layer >= 0 && static_cast<size_t>(layer) < s.size()
                               ? s[static_cast<size_t>(layer)].split
                               : TensorSplit::Whole);
}
uint64_t CompiledPlan::bytes_per_device() const {
  return program_->bytes_per_device();
}

size_t CompiledPlan::graph_count() const {
  return program_->graphs.size();
}

int CompiledPlan::variant_index(VariantKind kind) const noexcept {
  return program_ ? program_->variant_index(kind) : -1;
}

namespace {

// What span `s` of a collective carries, in words.
std::string span_cause(const CompiledProject& cp, const MemoryPlan& plan, const RegionSpan& s) {
  std::vector<std::string> parts;
  const std::optional<ParamKind> first = region_param_kind(s.first);
  if (first) {
    // The weights of the span's kinds (every series lays them out alike).
    const char series = region_series(s.first);
    const ParamKind last = region_param_kind(s.last).value_or(ParamKind::DEEP_CONV);
    int weights = 0;
    std::vector<int> layers;
    for (int k = static_cast<int>(*first); k <= static_cast<int>(last); ++k)
      for (DTensorId w :
           plan.region(param_region(ParamSeries::W, static_cast<ParamKind>(k))).tensors) {
        ++weights;
        const int owner = plan.get_dtensor(w).owner;
        if (owner >= 0 && std::find(layers.begin(), layers.end(), owner) == layers.end())
          layers.push_back(owner);
      }
    std::sort(layers.begin(), layers.end());
    std::string whose = std::to_string(weights) + (weights == 1 ? " weight" : " weights") + " of " +
                        std::to_string(layers.size()) + (layers.size() == 1 ? " layer" : " layers");
    if (!layers.empty()) {
      auto name = [&](int l) { return cp.project.model.nodes[static_cast<size_t>(l)].design_id(); };
      whose += " (" + name(layers.front());
      if (layers.size() > 1) whose += " .. " + name(layers.back());
      whose += ")";
    }
    parts.push_back(series == 'W' ? "each rank's updated share of the " + whose
                                  : "the gradients of the " + whose);
  }
  for (int r = region_index(s.first); r <= region_index(s.last); ++r) {
    switch (static_cast<Region>(r)) {
      case Region::R_RESULT:
        parts.push_back("the batch's loss, top-1 and top-5");
        break;
      case Region::R_RESULT_ACCUMULATED:
        parts.push_back("the validation totals");
        break;
      case Region::R_CONFUSION:
        parts.push_back("the confusion counts");
        break;
      case Region::B_NEXT_MEAN:
        parts.push_back("batch norm's running statistics");
        break;
      case Region::N_FC:
        parts.push_back("LARS's per-layer norms, as the ranks' sums of squares");
        break;
      case Region::S_SCALARS:
        parts.push_back("the overflow flag, so that every rank skips an overflowed step");
        break;
      default:
        break;
    }
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

// What a tensor-parallel collective of `id` carries, and for which layer.
std::string tensor_cause(const CompiledProject& cp, const GraphNode& n, DTensorId id) {
  if (n.layer < 0) return {};
  const LayerTensors& t = cp.layers.at(static_cast<size_t>(n.layer));
  const std::string layer = "'" + cp.project.model.nodes[static_cast<size_t>(n.layer)].id + "'";
  const std::string samples = ", each rank keeping its own samples of the sum";
  switch (n.range_op) {
    case RangeOp::ALLGATHER_BATCH:
      if (id == t.grad)
        return "row-parallel " + layer +
               "'s output gradient, gathered from the "
               "tensor ranks' samples";
      return "column-parallel " + layer + "'s input, gathered from the tensor ranks' samples" +
             (n.outputs.front() == t.gathered_again ? " again for its backward" : "");
    case RangeOp::REDUCE_SCATTER_BATCH:
      if (id == t.partial)
        return "the tensor ranks' partial products of row-parallel " + layer +
               " (bias from tensor rank 0), summed" + samples;
      return "the tensor ranks' partial input gradients of column-parallel " + layer + ", summed" +
             samples;
    default:
      return "the tensor ranks' gradients of whole " + layer + "'s " +
             cp.plans.front().get_dtensor(id).name + ", each of its own samples, summed";
  }
}

// Adds one more thing a collective carries to what it said already.
void append_cause(std::string& causes, const std::string& cause) {
  if (!cause.empty()) causes += (causes.empty() ? "" : "; ") + cause;
}

}  // namespace

std::optional<PlanNode> CompiledPlan::node(GraphId graph, int variant, int node) const {
  const ComputationGraph* g = program_ ? program_->find_graph(graph, variant) : nullptr;
  if (!g || node < 0 || static_cast<size_t>(node) >= g->nodes.size()) return std::nullopt;
  const GraphNode& n = g->nodes[static_cast<size_t>(node)];
  PlanNode out;
  out.op = n.kind == NodeKind::RANGE ? range_op_name(n.range_op) : compute_op_name(n.op);
  out.layer = n.layer;
  out.input_copy = n.kind == NodeKind::COMPUTE && n.op == ComputeOp::H2D_INPUT;
  if (n.kind == NodeKind::RANGE && is_collective(n.range_op)) {
    const MemoryPlan& plan = program_->plans.at(static_cast<size_t>(std::max(variant, 0)));
    for (const RegionSpan& s : n.in_spans) {
      out.collective_bytes += plan.region_range(s.first, s.last).bytes;
      append_cause(out.collective_cause, span_cause(*program_, plan, s));
      if (!out.collective_regions.empty()) out.collective_regions += ", ";
      out.collective_regions += std::string(region_name(s.first));
      if (s.last != s.first) out.collective_regions += ".." + std::string(region_name(s.last));
    }
    // Tensor parallel: a tensor over the tensor ranks.
    for (DTensorId id : n.inputs) {
      const DTensor& t = plan.get_dtensor(id);
      out.collective_bytes += t.device_bytes();
      out.collective_regions += (out.collective_regions.empty() ? "" : ", ") + t.name;
      append_cause(out.collective_cause, tensor_cause(*program_, n, id));
    }
  }
  return out;
}

std::string share_slice_text(const ShareSlice& s) {
  if (s.first == 0 && s.count == s.elements) return s.parameter;
  return s.parameter + "[" + std::to_string(s.first) + ":" + std::to_string(s.first + s.count) +
         "]";
}

std::vector<ShareSlice> bucket_share(const CompiledProject& cp, int bucket, int rank) {
  std::vector<ShareSlice> out;
  const GradientBucket& b = kGradientBuckets[static_cast<size_t>(bucket)];
  const MemoryPlan& plan = cp.plans.front();
  for (int k = static_cast<int>(b.first); k <= static_cast<int>(b.last); ++k)
    for (DTensorId w :
         plan.region(param_region(ParamSeries::W, static_cast<ParamKind>(k))).tensors) {
      const DTensor& t = plan.get_dtensor(w);
      const ShareOverlap o = share_overlap(plan, t, rank, cp.world_size);
      if (o.bytes > 0)
        out.push_back({t.name, t.owner, static_cast<int64_t>(o.in_weight / 4),
                       static_cast<int64_t>(o.bytes / 4), t.shape.elements()});
    }
  return out;
}

std::vector<ShareSlice> CompiledPlan::rank_share(DTensorId id, int rank) const {
  const EngineTensors& e = program_->engine;
  for (int b = 0; b < 2; ++b)
    if (id != kNoTensor && (id == e.m_shard[b] || id == e.v_shard[b] || id == e.g_shard[b]))
      return bucket_share(*program_, b, rank);
  return {};
}

CompiledPlan compile_plan(const Project& project, const CompileOptions& options) {
  return CompiledPlan(std::make_shared<const CompiledProject>(compile_project(project, options)));
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/lifetimes.h"

#include <algorithm>

namespace tr {

namespace {

// The B buffer's graphs repeat the A buffer's with the other input: one
// stands for both in a step.
bool is_b_twin(GraphId id) noexcept {
  return id == GraphId::TRANSFER_B || id == GraphId::FIRST_LAYER_FWD_B ||
         id == GraphId::FIRST_LAYER_BWD_B || id == GraphId::INF_MAIN_B;
}

// The graphs the step schedule launches on UPDATE under the first layer's
// backward (ENGINE.md §6, step 5): what they touch is in use from that
// backward's start, whatever their place in the order.
bool runs_beside_first_backward(GraphId id) noexcept {
  return id == GraphId::CAST_DEEP_GRAD_FP16_TO_FP32 || id == GraphId::CAST_DEEP_GRAD_BF16_TO_FP32 ||
         id == GraphId::DEEP_COMM;
}

// What a validation pass runs, as against a training step.
bool is_evaluation(GraphId id) noexcept {
  return id == GraphId::RESET_METRICS || id == GraphId::UPDATE_BN_INF_PARAMS ||
         id == GraphId::INF_MAIN_A || id == GraphId::INF_MAIN_B || id == GraphId::VAL_RESULT_COMM;
}

}  // namespace

StepLifetimes step_lifetimes(const CompiledProject& cp, int variant) {
  StepLifetimes out;
  const MemoryPlan& plan = cp.plans.at(static_cast<size_t>(variant));
  std::vector<int> first(plan.dtensors().size(), -1), last(plan.dtensors().size(), -1);
  auto touch = [&](DTensorId id, int position) {
    if (id < 0 || static_cast<size_t>(id) >= first.size()) return;
    if (!plan.step_local(plan.get_dtensor(id).region)) return;
    const size_t i = static_cast<size_t>(id);
    if (first[i] < 0 || position < first[i]) first[i] = position;
    last[i] = std::max(last[i], position);
  };
  const bool evaluation =
      cp.variants.at(static_cast<size_t>(variant)).kind == VariantKind::Validation;
  int first_backward = -1;  // where FIRST_LAYER_BWD starts
  for (int g = 0; g < kNumGraphIds; ++g) {
    const GraphId id = static_cast<GraphId>(g);
    if (is_b_twin(id)) continue;
    // A validation pass transfers its batches and runs the evaluation graphs.
    if (evaluation ? !is_evaluation(id) && id != GraphId::TRANSFER_A : is_evaluation(id)) continue;
    const ComputationGraph* graph = cp.find_graph(id, variant);
    if (!graph) continue;
    if (id == GraphId::FIRST_LAYER_BWD_A) first_backward = static_cast<int>(out.order.size());
    for (size_t n = 0; n < graph->nodes.size(); ++n) {
      const GraphNode& node = graph->nodes[n];
      const int position = static_cast<int>(out.order.size());
      out.order.push_back({id, static_cast<int>(n), node.layer});
      auto touch_here = [&](DTensorId t) {
        touch(t, position);
        if (first_backward >= 0 && runs_beside_first_backward(id)) touch(t, first_backward);
      };
      for (DTensorId t : node.inputs) touch_here(t);
      for (DTensorId t : node.outputs) touch_here(t);
      // A RANGE node touches every tensor of the regions it spans.
      for (const auto* spans : {&node.in_spans, &node.out_spans})
        for (const RegionSpan& s : *spans)
          for (int r = region_index(s.first); r <= region_index(s.last); ++r)
            for (DTensorId t : plan.region(static_cast<Region>(r)).tensors) touch_here(t);
    }
  }
  std::vector<int64_t> delta(out.order.size() + 1, 0);
  for (const DTensor& t : plan.dtensors()) {
    if (!plan.step_local(t.region)) continue;
    const size_t i = static_cast<size_t>(t.id);
    TensorLifetime l{t.id, first[i], last[i], t.device_bytes()};
    out.planned_bytes += t.slot_bytes;
    if (l.first >= 0) {
      delta[static_cast<size_t>(l.first)] += static_cast<int64_t>(l.bytes);
      delta[static_cast<size_t>(l.last) + 1] -= static_cast<int64_t>(l.bytes);
    }
    out.tensors.push_back(l);
  }
  int64_t live = 0;
  for (size_t p = 0; p < out.order.size(); ++p) {
    live += delta[p];
    if (static_cast<uint64_t>(live) > out.peak_bytes) {
      out.peak_bytes = static_cast<uint64_t>(live);
      out.peak_position = static_cast<int>(p);
    }
  }
  return out;
}

std::string StepLifetimes::describe(const Project& project, int position) const {
  if (position < 0 || static_cast<size_t>(position) >= order.size()) return "nowhere";
  const StepPosition& p = order[static_cast<size_t>(position)];
  std::string s = std::string(graph_id_name(p.graph)) + " #" + std::to_string(p.node);
  if (p.layer >= 0 && static_cast<size_t>(p.layer) < project.model.nodes.size())
    s += " (" + project.model.nodes[static_cast<size_t>(p.layer)].id + ")";
  return s;
}

StepLifetimes step_lifetimes(const CompiledPlan& plan, int variant) {
  return step_lifetimes(plan.program(), variant);
}

}  // namespace tr

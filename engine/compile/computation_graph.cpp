// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/computation_graph.h"

#include <cstdio>

#include <renaissance/memory_plan.h>
#include <renaissance/project.h>

namespace tr {

namespace {

std::string tensor_text(const MemoryPlan& plan, DTensorId id) {
  if (id == kNoTensor) return "-";
  const DTensor& t = plan.get_dtensor(id);
  // Parameter tensors share their name across series; the region tells them apart.
  const char series = region_series(t.region);
  const bool param = series == 'W' || series == 'E' || series == 'A' || series == 'G' ||
                     series == 'H' || series == 'M' || series == 'V';
  return "t" + std::to_string(id) + ":" + t.name +
         (param ? "@" + std::string(region_name(t.region)) : std::string()) + t.shape.str() +
         std::string(dtype_name(t.dtype));
}

std::string span_text(const MemoryPlan& plan, const RegionSpan& s) {
  const ByteRange r = plan.region_range(s.first, s.last);
  std::string name(region_name(s.first));
  if (s.last != s.first) name += ".." + std::string(region_name(s.last));
  return name + "{+" + std::to_string(r.offset) + "," + std::to_string(r.bytes) + "B}";
}

template <class T, class F>
std::string list(const std::vector<T>& xs, F f) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? " " : "") + f(xs[i]);
  return s;
}

}  // namespace

std::string graph_to_text(const ComputationGraph& graph, const MemoryPlan& plan,
                          const ModelGraph& model, const std::string& variant_name) {
  std::string out = "graph " + std::string(graph_id_name(graph.id)) +
                    "  variant=" + (graph.variant < 0 ? std::string("*") : variant_name) +
                    "  stream=" + std::string(stream_kind_name(graph.stream)) +
                    "  nodes=" + std::to_string(graph.nodes.size()) +
                    (graph.shape_invariant ? "  shape-invariant" : "") + "\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& n = graph.nodes[i];
    char head[96];
    const std::string op(n.kind == NodeKind::RANGE ? range_op_name(n.range_op)
                                                   : compute_op_name(n.op));
    std::snprintf(head, sizeof head, "  %3zu %-6s %-5s %-20s ", i,
                  std::string(stream_kind_name(n.stream)).c_str(),
                  n.kind == NodeKind::RANGE ? "RANGE" : "OP", op.c_str());
    out += head;
    out += n.layer >= 0 ? model.nodes[static_cast<size_t>(n.layer)].id : std::string("(engine)");
    auto tensor = [&](DTensorId id) { return tensor_text(plan, id); };
    auto span = [&](const RegionSpan& s) { return span_text(plan, s); };
    if (!n.in_spans.empty()) out += "\n        in:  " + list(n.in_spans, span);
    if (!n.inputs.empty()) out += "\n        in:  " + list(n.inputs, tensor);
    if (!n.out_spans.empty()) out += "\n        out: " + list(n.out_spans, span);
    if (!n.outputs.empty()) out += "\n        out: " + list(n.outputs, tensor);
    if (n.accumulate_mask)
      out += "\n        accumulates into output(s) with mask " + std::to_string(n.accumulate_mask);
    if (!n.fork.empty()) {
      out += "\n        fork:";
      for (const ForkPart& f : n.fork) {
        out += " " + std::string(bwd_part_name(f.part)) + "@" +
               std::string(stream_kind_name(f.stream));
        if (f.after >= 0)
          out += "(after " + std::string(bwd_part_name(n.fork[static_cast<size_t>(f.after)].part)) +
                 ")";
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace tr

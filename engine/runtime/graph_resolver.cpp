// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/graph_resolver.h"

#include <algorithm>

#include <stdexcept>

#include "core/data_shard.h"
#include "plan/gradient_buckets.h"

namespace tr {

namespace {

ByteRange slot(const DTensor& t) {
  return {t.offset, t.slot_bytes};
}

TensorArg tensor_arg(const MemoryPlan& plan, uint8_t* arena, DTensorId id) {
  const DTensor& t = plan.get_dtensor(id);
  return {arena + t.offset, &t};
}

SpanArg span_arg(const MemoryPlan& plan, uint8_t* arena, const RegionSpan& s) {
  const ByteRange r = plan.region_range(s.first, s.last);
  SpanArg a;
  a.data = arena + r.offset;
  a.bytes = r.bytes;
  a.offset = r.offset;
  for (int ri = region_index(s.first); ri <= region_index(s.last); ++ri)
    for (DTensorId id : plan.region(static_cast<Region>(ri)).tensors)
      a.tensors.push_back(&plan.get_dtensor(id));
  return a;
}

// ZeRO-1 and 2: a sharded update's span as this rank reaches it. The span's
// kinds lie in one gradient bucket; the rank's share of the bucket (the same
// in every full series) cuts the weights' and gradients' spans, and the
// spans of the moments (and of ZeRO-2's summed gradients) are that share's
// place in the bucket's shards.
SpanArg sharded_span_arg(const CompiledProject& cp, const MemoryPlan& plan, uint8_t* arena,
                         const RegionSpan& s, int rank, int world) {
  const std::optional<ParamKind> first = region_param_kind(s.first);
  const std::optional<ParamKind> last = region_param_kind(s.last);
  // LARS's per-layer norms are read whole.
  if (!first || !last) return span_arg(plan, arena, s);
  const size_t b = static_cast<size_t>(bucket_of(*first));
  const GradientBucket& bucket = kGradientBuckets[b];
  const ByteRange whole = bucket_range(plan, bucket, ParamSeries::W);
  const ShardShare share = shard_share(whole.bytes, rank, world);
  const ByteRange w =
      plan.region_range(param_region(ParamSeries::W, *first), param_region(ParamSeries::W, *last));
  const uint64_t from = w.offset - whole.offset;
  const uint64_t lo = std::max(from, share.begin);
  const uint64_t hi = std::max(lo, std::min(from + w.bytes, share.end));
  SpanArg a;
  const char series = region_series(s.first);
  if (series == 'M' || series == 'V' || series == 'Q') {
    const DTensorId shard = series == 'M'   ? cp.engine.m_shard[b]
                            : series == 'V' ? cp.engine.v_shard[b]
                                            : cp.engine.g_shard[b];
    a.offset = plan.get_dtensor(shard).offset + (lo - share.begin);
  } else {
    const SpanArg full = span_arg(plan, arena, s);
    a.offset = full.offset + (lo - from);
    a.tensors = full.tensors;
  }
  a.data = arena + a.offset;
  a.bytes = hi - lo;
  return a;
}

// Which of a forked backward op's tensors each part touches: inputs are
// [x, w, dy], outputs [dw, (db), dx].
Footprint part_footprint(const GraphNode& n, const MemoryPlan& plan, BwdPart part) {
  Footprint f;
  auto read = [&](DTensorId id) { f.read(slot(plan.get_dtensor(id)), &plan.get_dtensor(id)); };
  auto write = [&](DTensorId id) { f.write(slot(plan.get_dtensor(id)), &plan.get_dtensor(id)); };
  const bool bias = n.outputs.size() == 3;
  switch (part) {
    case BwdPart::DW:
      read(n.inputs[0]);
      read(n.inputs[2]);
      write(n.outputs[0]);
      break;
    case BwdPart::DB:
      read(n.inputs[2]);
      if (bias) write(n.outputs[1]);
      break;
    case BwdPart::DX:
      read(n.inputs[1]);
      read(n.inputs[2]);
      // accumulating into dx also reads it
      if (n.accumulate_mask >> (n.outputs.size() - 1) & 1u) read(n.outputs.back());
      write(n.outputs.back());
      break;
  }
  return f;
}

}  // namespace

ResolvedGraph resolve_graph(const CompiledProject& cp, const ComputationGraph& graph, int variant,
                            uint8_t* arena, int rank, int world) {
  const MemoryPlan& plan = cp.plans.at(static_cast<size_t>(variant));
  ResolvedGraph rg;
  rg.graph = &graph;
  rg.variant = variant;
  rg.rank = rank;
  rg.nodes.reserve(graph.nodes.size());
  float* scalars = reinterpret_cast<float*>(arena + plan.get_dtensor(cp.engine.scalars).offset);
  // The mesh: consecutive ranks form a tensor-parallel group, whose split
  // layers compute the samples of the group's ranks together: their first
  // sample is the data rank's.
  const int tensor_rank = rank % cp.tensor_ranks;
  const int data_rank = rank / cp.tensor_ranks, data_world = world / cp.tensor_ranks;
  for (const GraphNode& n : graph.nodes) {
    const bool group_batch = n.layer >= 0 && !cp.splits.empty() &&
                             cp.splits[static_cast<size_t>(n.layer)].split != TensorSplit::Whole;
    ResolvedNode rn;
    KernelArgs& a = rn.args;
    a.node = &n;
    a.layer_params = &n.params;
    a.training = &cp.constants;
    a.scalars = scalars;
    a.seed = cp.project.training.seed;
    a.rank = group_batch ? data_rank : rank;
    a.world = group_batch ? data_world : world;
    for (DTensorId id : n.inputs) {
      a.in.push_back(tensor_arg(plan, arena, id));
      rn.footprint.read(slot(plan.get_dtensor(id)), &plan.get_dtensor(id));
    }
    // A row-parallel layer's bias: the first tensor rank's partial sum carries it.
    if (n.bias_on_first_tensor_rank && tensor_rank != 0 && a.in.size() == 3) a.in.pop_back();
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const DTensorId id = n.outputs[i];
      a.out.push_back(tensor_arg(plan, arena, id));
      rn.footprint.write(slot(plan.get_dtensor(id)), &plan.get_dtensor(id));
      // Accumulating reads what is there, unless an earlier output of this
      // node is the same tensor (both ports of an Add or a Concat fed by one
      // producer): then the kernel wrote it first, and nothing before is read.
      const bool earlier = std::find(n.outputs.begin(), n.outputs.begin() + static_cast<long>(i),
                                     id) != n.outputs.begin() + static_cast<long>(i);
      if (n.accumulate_mask >> i & 1u && !earlier)
        rn.footprint.read(slot(plan.get_dtensor(id)), &plan.get_dtensor(id));
    }
    // The footprint is the bytes reached (a sharded update's share).
    auto span = [&](const RegionSpan& s) {
      return n.data_sharded ? sharded_span_arg(cp, plan, arena, s, data_rank, data_world)
                            : span_arg(plan, arena, s);
    };
    for (const RegionSpan& s : n.in_spans) {
      a.in_spans.push_back(span(s));
      rn.footprint.read({a.in_spans.back().offset, a.in_spans.back().bytes});
    }
    for (const RegionSpan& s : n.out_spans) {
      a.out_spans.push_back(span(s));
      rn.footprint.write({a.out_spans.back().offset, a.out_spans.back().bytes});
    }
    for (size_t k = 0; k < n.fork.size(); ++k) {
      KernelArgs pa = a;
      pa.part = static_cast<int>(n.fork[k].part);
      rn.part_args.push_back(std::move(pa));
      rn.part_footprints.push_back(part_footprint(n, plan, n.fork[k].part));
    }
    rg.nodes.push_back(std::move(rn));
  }
  return rg;
}

std::vector<Launch> node_launches(const CompiledProject& cp, const ResolvedGraph& rg, size_t index,
                                  const TransferHost& host) {
  const ResolvedNode& rn = rg.nodes[index];
  const GraphNode& n = *rn.args.node;
  const std::string where = std::string(graph_id_name(rg.graph->id)) + "#" + std::to_string(index);
  const std::string layer =
      n.layer >= 0 ? " " + cp.project.model.nodes[static_cast<size_t>(n.layer)].id : "";
  auto tag = [&](const std::string& op, int part) {
    LaunchTag t;
    t.graph = rg.graph->id;
    t.node = static_cast<int>(index);
    t.part = part;
    t.stream = n.stream;
    t.label = where + " " + op + layer;
    return t;
  };
  std::vector<Launch> out;
  if (n.kind == NodeKind::COMPUTE && n.op == ComputeOp::H2D_INPUT) {
    const void* sources[2] = {host.data, host.labels};
    for (size_t i = 0; i < 2; ++i) {
      const DTensor& t = *rn.args.out[i].desc;
      if (!sources[i]) throw std::logic_error("TRANSFER graph captured without host buffers");
      Launch l;
      l.kind = LaunchKind::COPY_H2D;
      l.offset = t.offset;
      l.host = const_cast<void*>(sources[i]);
      // Host batches have the device's layout (the pipeline pads C, FP16
      // input buffers to 4, with zero lanes): one contiguous copy.
      l.bytes = t.device_bytes();
      l.footprint.write({t.offset, t.slot_bytes}, &t);
      l.tag = tag(i == 0 ? "H2D data" : "H2D labels", -1);
      out.push_back(std::move(l));
    }
    return out;
  }
  const std::string op(n.kind == NodeKind::RANGE ? range_op_name(n.range_op)
                                                 : compute_op_name(n.op));
  if (n.fork.empty()) {
    Launch l;
    l.kind = n.kind == NodeKind::RANGE && is_collective(n.range_op) ? LaunchKind::COLLECTIVE
                                                                    : LaunchKind::KERNEL;
    l.args = &rn.args;
    l.footprint = rn.footprint;
    l.tag = tag(op, -1);
    l.tag.collective = l.kind == LaunchKind::COLLECTIVE;
    out.push_back(std::move(l));
    return out;
  }
  for (size_t k = 0; k < n.fork.size(); ++k) {
    Launch l;
    l.args = &rn.part_args[k];
    l.footprint = rn.part_footprints[k];
    l.tag = tag(op + " " + std::string(bwd_part_name(n.fork[k].part)),
                static_cast<int>(n.fork[k].part));
    l.tag.stream = n.fork[k].stream;
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tr

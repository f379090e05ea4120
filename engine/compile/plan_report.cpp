// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/plan_report.h"

#include "compile/channel_blocks.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <renaissance/layer_spec.h>
#include "compile/lifetimes.h"
#include "plan/gradient_buckets.h"
#include "plan/tensor_shards.h"

namespace tr {

namespace {

std::string fmt(const char* f, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, args...);
  return buf;
}

std::string owner_id(const CompiledProject& cp, int owner) {
  return owner >= 0 ? cp.project.model.nodes[static_cast<size_t>(owner)].id : std::string();
}

// What the compiler's rewrites did to a layer, in a few words ("" if nothing).
std::string rewrite_note(const CompiledProject& cp, int v) {
  const LayerTensors& t = cp.layers[static_cast<size_t>(v)];
  std::string s;
  if (t.fused_relu >= 0) s = "+" + owner_id(cp, t.fused_relu) + " fused";
  if (t.fused_into >= 0) s = "in " + owner_id(cp, t.fused_into);
  if (t.grad_in_place) s += std::string(s.empty() ? "" : ", ") + "grad in place";
  if (t.recomputed != kNoTensor) s += std::string(s.empty() ? "" : ", ") + "recomputed in bwd";
  if (is_pool_where(cp, v)) s += std::string(s.empty() ? "" : ", ") + "bwd from where";
  if (cp.tensor_ranks > 1) {
    const LayerSplit& ls = cp.splits[static_cast<size_t>(v)];
    const LayerType type = cp.project.model.nodes[static_cast<size_t>(v)].type;
    std::string split;
    switch (ls.split) {
      case TensorSplit::Column:
        split = ls.blocks == 3 ? "tensor: column, its ranks' heads of q, k and v; dX summed"
                               : "tensor: column, its share of the outputs; dX summed";
        break;
      case TensorSplit::Local:
        split = type == LayerType::SelfAttention ? "tensor: its ranks' heads"
                                                 : "tensor: its share of the channels";
        break;
      case TensorSplit::Row:
        split = "tensor: row, its share of the inputs; Y summed, bias on tensor rank 0";
        break;
      case TensorSplit::Whole:
        if (!ls.why_whole.empty()) split = "tensor: whole, " + ls.why_whole;
        if (type == LayerType::Conv2d) split = "tensor: whole (convolutions stay replicated)";
        break;
    }
    if (!split.empty()) s += std::string(s.empty() ? "" : ", ") + split;
  }
  return s;
}

// "R", or over a mesh with a tensor dimension "R,S(0)": per mesh dimension.
std::string placement_text(const CompiledProject& cp, const DTensor& t) {
  return cp.tensor_ranks > 1 ? t.placement.str() + "," + t.tensor_placement.str()
                             : t.placement.str();
}

// Per tensor, the others whose bytes overlap its own in this plan (a packed
// plan's pool); empty lists for an unpacked plan.
std::vector<std::vector<DTensorId>> shared_bytes(const MemoryPlan& plan) {
  std::vector<std::vector<DTensorId>> out(plan.dtensors().size());
  if (!plan.packed()) return out;
  std::vector<const DTensor*> pooled;
  for (const DTensor& t : plan.dtensors())
    if (plan.step_local(t.region) && plan.in_use(t.id)) pooled.push_back(&t);
  std::sort(pooled.begin(), pooled.end(),
            [](const DTensor* a, const DTensor* b) { return a->offset < b->offset; });
  for (size_t i = 0; i < pooled.size(); ++i)
    for (size_t k = i + 1;
         k < pooled.size() && pooled[k]->offset < pooled[i]->offset + pooled[i]->slot_bytes; ++k) {
      out[static_cast<size_t>(pooled[i]->id)].push_back(pooled[k]->id);
      out[static_cast<size_t>(pooled[k]->id)].push_back(pooled[i]->id);
    }
  for (auto& ids : out) std::sort(ids.begin(), ids.end());
  return out;
}

nlohmann::json pool_json(const MemoryPlan& plan, const PoolSummary& p) {
  return {{"offset", plan.pool().offset},
          {"bytes", p.packed_bytes},
          {"slot_bytes", p.slot_bytes},
          {"peak_live_slot_bytes", p.peak_live_bytes},
          {"bytes_before_packing", plan.pool().offset + p.slot_bytes},
          {"strategy", packing_strategy_name(p.strategy)}};
}

}  // namespace

uint64_t unpacked_bytes_per_device(const CompiledProject& cp) {
  if (cp.pools.empty()) return cp.bytes_per_device();
  // Every region but the pool is laid out as unpacked; the pool's tensors
  // would each take their largest slot of any variant.
  const MemoryPlan& ref = cp.plans.front();
  uint64_t bytes = ref.pool().offset;
  for (const DTensor& t : ref.dtensors()) {
    if (!ref.step_local(t.region)) continue;
    uint64_t slot = 0;
    for (const MemoryPlan& p : cp.plans) slot = std::max(slot, p.get_dtensor(t.id).slot_bytes);
    bytes += slot;
  }
  return bytes;
}

ShardedBytes sharded_bytes(const MemoryPlan& plan) {
  ShardedBytes b;
  for (const DTensor& t : plan.dtensors()) {
    const bool shard = t.placement.kind == PlacementKind::Shard;
    const uint64_t whole =
        shard ? static_cast<uint64_t>(t.global_elements) * dtype_size(t.dtype) : t.slot_bytes;
    if (shard) {
      b.per_rank += t.slot_bytes;
      b.whole += whole;
    }
    if (!region_param_kind(t.region)) continue;
    switch (region_series(t.region)) {
      case 'M':
      case 'V':
        b.moments += t.slot_bytes;
        b.moments_whole += whole;
        break;
      case 'G':
      case 'H':
        b.gradients_whole += t.slot_bytes;
        (plan.step_local(t.region) ? b.pooled_gradients : b.gradients) += t.slot_bytes;
        break;
      case 'Q':
        b.gradients += t.slot_bytes;
        break;
      default:
        break;
    }
  }
  return b;
}

TensorSplitBytes tensor_split_bytes(const MemoryPlan& plan, int tensor_ranks) {
  TensorSplitBytes b;
  for (const DTensor& t : plan.dtensors()) {
    const bool feature = region_series(t.region) == 'F';
    if (t.owner < 0 || (!feature && !region_param_kind(t.region))) continue;
    if (feature && tensor_ranks > 1 && t.tensor_placement.kind != PlacementKind::Shard) {
      b.communication += t.slot_bytes;
      continue;
    }
    const uint64_t whole =
        DTensor::slot_bytes_for(whole_shape(t, tensor_ranks), t.dtype, t.region, t.pad_channels);
    (feature ? b.features : b.params) += t.slot_bytes;
    (feature ? b.features_whole : b.params_whole) += whole;
  }
  return b;
}

namespace {

// "momentum.first_bucket, gradient.first_bucket, ...": the plan's shards.
std::string shard_tensor_names(const CompiledProject& cp) {
  std::string out;
  for (const DTensor& t : cp.plans.front().dtensors())
    if (t.placement.kind == PlacementKind::Shard) out += (out.empty() ? "" : ", ") + t.name;
  return out;
}

}  // namespace

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt("%llu B", static_cast<unsigned long long>(bytes))
                : fmt("%.2f %s", v, units[u]);
}

double recompute_flops_share(const CompiledProject& cp) {
  int64_t extra = 0;
  for (const RecomputeChoice& c : cp.recomputed) extra += c.extra_flops;
  const int64_t step = 3 * cp.analysis.total_flops;
  return step > 0 ? static_cast<double>(extra) / static_cast<double>(step) : 0.0;
}

std::string recompute_summary(const CompiledProject& cp) {
  const std::vector<RecomputeChoice>& chosen = cp.recomputed;
  if (chosen.empty()) return {};
  uint64_t bytes = 0;
  for (const RecomputeChoice& c : chosen) bytes += c.bytes;
  std::string names = chosen.front().layer;
  if (chosen.size() > 1) names += (chosen.size() > 2 ? " .. " : ", ") + chosen.back().layer;
  return fmt(
      "recomputes %zu of %zu layer outputs in the backward (%s): %s of saved "
      "features, +%.2f%% of a step's FLOPs",
      chosen.size(), cp.recompute_candidates.size(), names.c_str(), human_bytes(bytes).c_str(),
      100.0 * recompute_flops_share(cp));
}

std::string plan_report_text(const CompiledProject& cp) {
  const Project& p = cp.project;
  std::string out;
  out +=
      fmt("project %s: %d layers, %lld parameters%s, %s, %s on %s (%d rank%s%s)\n", p.name.c_str(),
          static_cast<int>(p.model.nodes.size()), static_cast<long long>(cp.analysis.total_params),
          cp.tensor_ranks > 1 ? " on each tensor rank" : "",
          std::string(precision_name(p.training.precision)).c_str(),
          std::string(optimizer_name(p.training.optimizer.kind)).c_str(),
          p.training.devices.str().c_str(), cp.world_size, cp.world_size > 1 ? "s" : "",
          cp.tensor_ranks > 1
              ? fmt(", mesh data=%d x tensor=%d", cp.data_ranks(), cp.tensor_ranks).c_str()
              : "");
  const auto& train = cp.variants[static_cast<size_t>(cp.variant_index(VariantKind::Train))];
  out += fmt("\nlayers (variant %s, batch %lld per device)\n", train.name.c_str(),
             static_cast<long long>(train.batch));
  out += fmt("  %-18s %-20s %-22s %-20s %12s %16s  %s\n", "id", "type", "params", "output",
             "parameters", "fwd FLOPs", "rewrites");
  for (int v : cp.analysis.order) {
    const LayerNode& n = p.model.nodes[static_cast<size_t>(v)];
    const NodeAnalysis& na = cp.analysis.nodes[static_cast<size_t>(v)];
    const std::string shape = layer_output_ports(n.type) > 0 ? na.output.str() : "loss";
    std::string line = fmt("  %-18s %-20s %-22s %-20s %12lld %16lld  %s", n.id.c_str(),
                           std::string(layer_type_name(n.type)).c_str(), layer_summary(n).c_str(),
                           shape.c_str(), static_cast<long long>(na.params),
                           static_cast<long long>(na.flops), rewrite_note(cp, v).c_str());
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  out += fmt("  %-18s %-20s %-22s %-20s %12lld %16lld\n", "total", "", "", "",
             static_cast<long long>(cp.analysis.total_params),
             static_cast<long long>(cp.analysis.total_flops));

  for (size_t vi = 0; vi < cp.variants.size(); ++vi) {
    const ResolvedVariant& var = cp.variants[vi];
    const MemoryPlan& plan = cp.plans[vi];
    out += fmt("\nvariant %s (%s, batch %lld per device", var.name.c_str(),
               std::string(variant_kind_name(var.kind)).c_str(), static_cast<long long>(var.batch));
    if (var.height > 0)
      out +=
          fmt(", %lldx%lld", static_cast<long long>(var.height), static_cast<long long>(var.width));
    if (var.kind == VariantKind::Validation && cp.validation_batch_written > 0)
      out += fmt(", micro-batches of the validation batch %lld",
                 static_cast<long long>(cp.validation_batch_written));
    out += fmt("): %s\n", human_bytes(plan.total_bytes()).c_str());
    out += fmt("  %-22s %14s %14s %8s %8s\n", "region", "offset", "bytes", "share", "tensors");
    // In address order: a packed plan's pool comes after every other region.
    std::vector<int> rows;
    for (int pass = 0; pass < 2; ++pass)
      for (int r = 0; r < kNumRegions; ++r)
        if (plan.region(static_cast<Region>(r)).packed == (pass == 1)) rows.push_back(r);
    for (int r : rows) {
      const RegionInfo& info = plan.region(static_cast<Region>(r));
      if (info.tensors.empty()) continue;
      const double share =
          100.0 * static_cast<double>(info.total_bytes) / static_cast<double>(plan.total_bytes());
      out += fmt("  %-22s %14llu %14llu %7.2f%% %8zu\n",
                 std::string(region_name(static_cast<Region>(r))).c_str(),
                 static_cast<unsigned long long>(info.base_offset),
                 static_cast<unsigned long long>(info.total_bytes), share, info.tensors.size());
    }
    const StepLifetimes life = step_lifetimes(cp, static_cast<int>(vi));
    if (plan.packed()) {
      const PoolSummary& pool = cp.pools[vi];
      out +=
          fmt("  step-local pool (%s) at %llu: %s in the tensors' own slots, packed into %s "
              "(%s)\n",
              plan.gradients_in_pool() ? "F, T, S, G, H" : "F, T, S",
              static_cast<unsigned long long>(plan.pool().offset),
              human_bytes(pool.slot_bytes).c_str(), human_bytes(pool.packed_bytes).c_str(),
              std::string(packing_strategy_name(pool.strategy)).c_str());
      out += fmt("  this variant: %s before packing, %s after; at most %s live at once (at %s)\n",
                 human_bytes(plan.pool().offset + pool.slot_bytes).c_str(),
                 human_bytes(plan.total_bytes()).c_str(), human_bytes(pool.peak_live_bytes).c_str(),
                 life.describe(cp.project, pool.peak_position).c_str());
    } else {
      out += fmt("  per-step tensors (F, T, S): %s planned, at most %s live at once (at %s)\n",
                 human_bytes(life.planned_bytes).c_str(), human_bytes(life.peak_bytes).c_str(),
                 life.describe(cp.project, life.peak_position).c_str());
    }
    std::vector<const TensorLifetime*> lifetime_of(plan.dtensors().size(), nullptr);
    for (const TensorLifetime& l : life.tensors) lifetime_of[static_cast<size_t>(l.id)] = &l;
    out += fmt("  %-5s %-26s %-22s %-20s %-6s %6s %5s %14s %12s  %s\n", "id", "name", "region",
               "shape", "dtype", "pad_c", "place", "offset", "slot_bytes", "lifetime");
    for (const DTensor& t : plan.dtensors()) {
      std::string when;
      if (!plan.in_use(t.id))
        when = "unused in this variant";
      else if (const TensorLifetime* l = lifetime_of[static_cast<size_t>(t.id)]; l && l->first >= 0)
        when = fmt("[%d, %d]", l->first, l->last);
      std::string line =
          fmt("  %-5d %-26s %-22s %-20s %-6s %6lld %5s %14llu %12llu  %s", t.id, t.name.c_str(),
              std::string(region_name(t.region)).c_str(), t.shape.str().c_str(),
              std::string(dtype_name(t.dtype)).c_str(), static_cast<long long>(t.padded_c()),
              placement_text(cp, t).c_str(), static_cast<unsigned long long>(t.offset),
              static_cast<unsigned long long>(t.slot_bytes), when.c_str());
      line.erase(line.find_last_not_of(' ') + 1);
      out += line + "\n";
    }
  }
  const uint64_t per_device = cp.bytes_per_device();
  out += fmt("\nbytes per device: %llu (%s); %d device%s: %s in all\n",
             static_cast<unsigned long long>(per_device), human_bytes(per_device).c_str(),
             cp.world_size, cp.world_size > 1 ? "s" : "",
             human_bytes(per_device * static_cast<uint64_t>(cp.world_size)).c_str());
  if (!cp.pools.empty())
    out +=
        fmt("the largest variant's bytes, with step-local tensors packed by lifetime "
            "(%s with --memory-packing off)\n",
            human_bytes(unpacked_bytes_per_device(cp)).c_str());
  if (cp.options.channel_block > 0) {
    const MemoryPlan& first = cp.plans.front();
    out +=
        fmt("feature layout: %d of the %s variant's tensors in channel blocks of %d "
            "([N, C/%d, H, W, %d], for oneDNN's convolutions), the rest NHWC\n",
            channel_blocked_tensors(first), first.variant_name().c_str(), cp.options.channel_block,
            cp.options.channel_block, cp.options.channel_block);
  }
  if (const uint64_t budget = cp.options.memory_budget; budget > 0) {
    const std::string what = recompute_summary(cp);
    out += fmt("memory budget %s per device: %s; %s\n", human_bytes(budget).c_str(),
               per_device <= budget ? "fits" : "does NOT fit",
               what.empty() ? "recomputes nothing" : what.c_str());
    if (per_device > budget)
      out +=
          fmt("  even recomputing all %zu candidates it needs %s; a smaller batch fits "
              "(plan --max-batch --memory %llu)\n",
              cp.recompute_candidates.size(), human_bytes(per_device).c_str(),
              static_cast<unsigned long long>(budget));
  }
  auto ratio = [](uint64_t a, uint64_t b) {
    return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  out += "placements over the " + std::to_string(cp.data_ranks()) + " data-parallel rank" +
         (cp.data_ranks() > 1 ? "s" : "") +
         ": R every rank holds all of it, P its addend of a sum the bucket all-reduce (or "
         "reduce-scatter) takes, "
         "S(0) its share\n";
  if (cp.tensor_ranks > 1) {
    const TensorSplitBytes tb = tensor_split_bytes(cp.plans.front(), cp.tensor_ranks);
    out +=
        fmt("mesh data=%d x tensor=%d: ranks %s form a tensor-parallel group, whose split "
            "layers compute its ranks' samples together and each rank the other layers for "
            "its own (sequence parallel); the second placement is over its ranks: R all of "
            "it, S(0) its share of the rows (a weight's outputs, a feature's samples), S(3) "
            "of the channels (a weight's inputs, a feature's channels), P its addend of a sum "
            "the group's reduce-scatter takes\n",
            cp.data_ranks(), cp.tensor_ranks,
            cp.tensor_ranks == 2 ? "0-1, 2-3, ..." : "0..tensor-1, ...");
    out +=
        fmt("tensor parallel: each rank holds %s of the layers' parameters, gradients and "
            "optimizer state (%s on one rank, %.3fx) and %s of their features and gradient "
            "slots before packing (%s, %.3fx), with %s of communication buffers for the "
            "group's batch (gathered inputs and gradients, partial sums), each alive from its "
            "collective to its reader\n",
            human_bytes(tb.params).c_str(), human_bytes(tb.params_whole).c_str(),
            ratio(tb.params, tb.params_whole), human_bytes(tb.features).c_str(),
            human_bytes(tb.features_whole).c_str(), ratio(tb.features, tb.features_whole),
            human_bytes(tb.communication).c_str());
  }
  const ShardedBytes m = sharded_bytes(cp.plans.front());
  if (cp.sharded_gradients) {
    out += fmt(
        "sharding optimizer+gradients (ZeRO-2): each rank keeps %s of the optimizer moments' and "
        "gradients' %s (%.3fx) for the run: %s of the moments' %s, and of the gradients' %s its "
        "share of their sums, %s; each bucket is reduce-scattered, %s, and each rank updates its "
        "share of the weights, gathered after the update\n",
        human_bytes(m.moments + m.gradients).c_str(),
        human_bytes(m.moments_whole + m.gradients_whole).c_str(),
        ratio(m.moments + m.gradients, m.moments_whole + m.gradients_whole),
        human_bytes(m.moments).c_str(), human_bytes(m.moments_whole).c_str(),
        human_bytes(m.gradients_whole).c_str(), human_bytes(m.gradients).c_str(),
        m.pooled_gradients > 0
            ? ("the full gradients (" + human_bytes(m.pooled_gradients) +
               ") living in the step-local pool from their backward to their bucket's "
               "reduce-scatter")
                  .c_str()
            : "the full gradients keeping bytes of their own, as in the pool they would make "
              "the plan larger");
  } else if (cp.sharded_optimizer) {
    out +=
        fmt("sharding optimizer (ZeRO-1): each rank holds %s of the optimizer moments' %s "
            "(%.3fx) and updates its share of the weights, gathered after the update\n",
            human_bytes(m.moments).c_str(), human_bytes(m.moments_whole).c_str(),
            ratio(m.moments, m.moments_whole));
  }
  if (cp.sharded_optimizer) {
    out += fmt("\nwhat each rank's shards hold (%s; every other tensor is the same on each rank)\n",
               shard_tensor_names(cp).c_str());
    out += fmt("  %-5s %-7s %14s  %s\n", "rank", "bucket", "values", "weights");
    for (int r = 0; r < cp.world_size; ++r)
      for (int b = 0; b < 2; ++b) {
        if (cp.engine.m_shard[b] == kNoTensor && cp.engine.v_shard[b] == kNoTensor &&
            cp.engine.g_shard[b] == kNoTensor)
          continue;
        const std::vector<ShareSlice> share = bucket_share(cp, b, r);
        int64_t values = 0;
        for (const ShareSlice& s : share) values += s.count;
        std::string weights = "none (the bucket ends before this rank's share)";
        if (share.size() == 1) weights = share_slice_text(share.front());
        if (share.size() > 1)
          weights = share_slice_text(share.front()) + " .. " + share_slice_text(share.back()) +
                    " (" + std::to_string(share.size()) + " weights)";
        out += fmt("  %-5d %-7s %14lld  %s\n", r, std::string(kGradientBuckets[b].name).c_str(),
                   static_cast<long long>(values), weights.c_str());
      }
  }
  return out;
}

nlohmann::json plan_report_json(const CompiledProject& cp) {
  using nlohmann::json;
  const Project& p = cp.project;
  json j;
  j["project"] = p.name;
  j["total_bytes"] = cp.bytes_per_device();
  j["bytes_per_device"] = cp.bytes_per_device();
  j["memory_packing"] = !cp.pools.empty();
  j["unpacked_bytes_per_device"] = unpacked_bytes_per_device(cp);
  j["world_size"] = cp.world_size;
  j["devices"] = p.training.devices.str();
  j["precision"] = precision_name(p.training.precision);
  j["optimizer"] = optimizer_name(p.training.optimizer.kind);
  j["parameters"] = cp.analysis.total_params;
  j["forward_flops"] = cp.analysis.total_flops;
  json layers = json::array();
  for (int v : cp.analysis.order) {
    const LayerNode& n = p.model.nodes[static_cast<size_t>(v)];
    const NodeAnalysis& na = cp.analysis.nodes[static_cast<size_t>(v)];
    json l = {{"id", n.id},
              {"type", layer_type_name(n.type)},
              {"parameters", na.params},
              {"flops", na.flops}};
    if (layer_output_ports(n.type) > 0) l["output"] = na.output.dims();
    const LayerTensors& t = cp.layers[static_cast<size_t>(v)];
    if (t.fused_relu >= 0) l["fused_relu"] = owner_id(cp, t.fused_relu);
    if (t.fused_into >= 0) l["fused_into"] = owner_id(cp, t.fused_into);
    if (t.grad_in_place) l["grad_in_place"] = true;
    if (t.recomputed != kNoTensor) l["recomputed"] = true;
    layers.push_back(std::move(l));
  }
  j["layers"] = std::move(layers);
  json variants = json::array();
  for (size_t vi = 0; vi < cp.variants.size(); ++vi) {
    const ResolvedVariant& var = cp.variants[vi];
    const MemoryPlan& plan = cp.plans[vi];
    json regions = json::array();
    for (int r = 0; r < kNumRegions; ++r) {
      const RegionInfo& info = plan.region(static_cast<Region>(r));
      regions.push_back({{"name", region_name(static_cast<Region>(r))},
                         {"offset", info.base_offset},
                         {"bytes", info.total_bytes},
                         {"slot_bytes", info.slot_bytes},
                         {"packed", info.packed},
                         {"tensors", info.tensors.size()}});
    }
    const StepLifetimes life = step_lifetimes(cp, static_cast<int>(vi));
    std::vector<const TensorLifetime*> lifetime_of(plan.dtensors().size(), nullptr);
    for (const TensorLifetime& l : life.tensors) lifetime_of[static_cast<size_t>(l.id)] = &l;
    const std::vector<std::vector<DTensorId>> sharing = shared_bytes(plan);
    json tensors = json::array();
    for (const DTensor& t : plan.dtensors()) {
      json tj = {{"id", t.id},
                 {"name", t.name},
                 {"owner", owner_id(cp, t.owner)},
                 {"region", region_name(t.region)},
                 {"shape", t.shape.dims()},
                 {"dtype", dtype_name(t.dtype)},
                 {"padded_c", t.padded_c()},
                 {"offset", t.offset},
                 {"slot_bytes", t.slot_bytes},
                 {"placement", t.placement.str()}};
      if (t.global_elements > 0) tj["global_elements"] = t.global_elements;
      if (t.is_blocked()) tj["channel_block"] = t.channel_block;
      if (cp.tensor_ranks > 1) {
        tj["tensor_placement"] = t.tensor_placement.str();
        tj["whole_shape"] = whole_shape(t, cp.tensor_ranks).dims();
      }
      // [first, last] positions in the step's node order; null: not touched.
      if (const TensorLifetime* l = lifetime_of[static_cast<size_t>(t.id)]) {
        tj["lifetime"] = l->first >= 0 ? json::array({l->first, l->last}) : json(nullptr);
        tj["in_use"] = plan.in_use(t.id);
        // The tensors this one shares bytes with (never while both are live).
        tj["shares_with"] = sharing[static_cast<size_t>(t.id)];
      }
      tensors.push_back(std::move(tj));
    }
    // A validation run in micro-batches: the batch of the metrics it gives.
    const int64_t written = var.kind == VariantKind::Validation && cp.validation_batch_written > 0
                                ? cp.validation_batch_written
                                : var.batch;
    variants.push_back(
        {{"name", var.name},
         {"kind", variant_kind_name(var.kind)},
         {"batch", var.batch},
         {"batch_written", written},
         {"height", var.height},
         {"width", var.width},
         {"total_bytes", plan.total_bytes()},
         {"packed", plan.packed()},
         {"step_local_bytes", plan.packed() ? cp.pools[vi].slot_bytes : life.planned_bytes},
         {"pool", plan.packed() ? pool_json(plan, cp.pools[vi]) : json(nullptr)},
         // Packed: outputs written in place share their input's bytes.
         {"peak_live_bytes", plan.packed() ? cp.pools[vi].peak_live_bytes : life.peak_bytes},
         {"peak_at", life.describe(cp.project, plan.packed() ? cp.pools[vi].peak_position
                                                             : life.peak_position)},
         {"regions", std::move(regions)},
         {"tensors", std::move(tensors)}});
  }
  j["variants"] = std::move(variants);
  {
    auto choices = [](const std::vector<RecomputeChoice>& list) {
      json a = json::array();
      for (const RecomputeChoice& c : list)
        a.push_back({{"layer", c.layer}, {"bytes", c.bytes}, {"extra_flops", c.extra_flops}});
      return a;
    };
    const uint64_t budget = cp.options.memory_budget;
    j["channel_block"] = cp.options.channel_block;
    j["recompute"] = {{"memory_budget", budget},
                      {"fits_budget", budget == 0 || cp.bytes_per_device() <= budget},
                      {"candidates", choices(cp.recompute_candidates)},
                      {"chosen", choices(cp.recomputed)},
                      {"extra_flops_share", recompute_flops_share(cp)}};
  }
  {
    json mesh = {{"data", cp.data_ranks()}, {"tensor", cp.tensor_ranks}};
    if (cp.tensor_ranks > 1) {
      const TensorSplitBytes tb = tensor_split_bytes(cp.plans.front(), cp.tensor_ranks);
      mesh["param_bytes_per_rank"] = tb.params;
      mesh["param_bytes_whole"] = tb.params_whole;
      mesh["feature_bytes_per_rank"] = tb.features;
      mesh["feature_bytes_whole"] = tb.features_whole;
      mesh["communication_bytes_per_rank"] = tb.communication;
      json split_layers = json::array();
      for (size_t v = 0; v < cp.splits.size(); ++v) {
        const LayerSplit& ls = cp.splits[v];
        if (ls.split == TensorSplit::Whole && ls.why_whole.empty()) continue;
        json lj = {{"id", cp.project.model.nodes[v].id}, {"split", tensor_split_name(ls.split)}};
        if (ls.blocks > 1) lj["blocks"] = ls.blocks;
        if (!ls.why_whole.empty()) lj["why_whole"] = ls.why_whole;
        split_layers.push_back(std::move(lj));
      }
      mesh["layers"] = std::move(split_layers);
    }
    j["mesh"] = std::move(mesh);
  }
  j["sharding"] = {{"kind", cp.sharded_gradients   ? "optimizer+gradients"
                            : cp.sharded_optimizer ? "optimizer"
                                                   : "none"},
                   {"ranks", cp.world_size}};
  {
    const ShardedBytes m = sharded_bytes(cp.plans.front());
    j["sharding"]["moment_bytes_per_rank"] = m.moments;
    j["sharding"]["moment_bytes_unsharded"] = m.moments_whole;
    j["sharding"]["gradient_bytes_per_rank"] = m.gradients;
    j["sharding"]["gradient_bytes_unsharded"] = m.gradients_whole;
    j["sharding"]["gradient_bytes_in_pool"] = m.pooled_gradients;
    // What each rank's shards hold: per rank and bucket, the weights' runs.
    json ranks = json::array();
    for (int r = 0; cp.sharded_optimizer && r < cp.world_size; ++r) {
      json buckets = json::array();
      for (int b = 0; b < 2; ++b) {
        json weights = json::array();
        for (const ShareSlice& s : bucket_share(cp, b, r))
          weights.push_back(
              {{"name", s.parameter}, {"first", s.first}, {"count", s.count}, {"of", s.elements}});
        buckets.push_back({{"bucket", kGradientBuckets[b].name}, {"weights", std::move(weights)}});
      }
      ranks.push_back({{"rank", r}, {"buckets", std::move(buckets)}});
    }
    j["sharding"]["ranks"] = std::move(ranks);
  }
  json graphs = json::array();
  for (const ComputationGraph& g : cp.graphs)
    graphs.push_back({{"id", graph_id_name(g.id)},
                      {"variant", g.variant < 0 ? std::string("*")
                                                : cp.variants[static_cast<size_t>(g.variant)].name},
                      {"stream", stream_kind_name(g.stream)},
                      {"nodes", g.nodes.size()},
                      {"shape_invariant", g.shape_invariant}});
  j["graphs"] = std::move(graphs);
  return j;
}

std::string graphs_report_text(const CompiledProject& cp) {
  std::string out;
  for (const ComputationGraph& g : cp.graphs) {
    const size_t vi = g.variant < 0 ? 0 : static_cast<size_t>(g.variant);
    out += graph_to_text(g, cp.plans[vi], cp.project.model, cp.variants[vi].name) + "\n";
  }
  return out;
}

double recompute_flops_share(const CompiledPlan& plan) {
  return recompute_flops_share(plan.program());
}

std::string recompute_summary(const CompiledPlan& plan) {
  return recompute_summary(plan.program());
}

std::string plan_report_text(const CompiledPlan& plan) {
  return plan_report_text(plan.program());
}

nlohmann::json plan_report_json(const CompiledPlan& plan) {
  return plan_report_json(plan.program());
}

uint64_t unpacked_bytes_per_device(const CompiledPlan& plan) {
  return unpacked_bytes_per_device(plan.program());
}

std::string graphs_report_text(const CompiledPlan& plan) {
  return graphs_report_text(plan.program());
}

}  // namespace tr

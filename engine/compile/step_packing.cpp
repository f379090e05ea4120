// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/step_packing.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "compile/lifetimes.h"
#include "plan/gradient_buckets.h"
#include "plan/pool_packing.h"

namespace tr {

namespace {

void refuse_shared_step_locals(const CompiledProject& cp) {
  const MemoryPlan& plan = cp.plans.front();
  auto refuse = [](const ComputationGraph& g, std::string_view what) {
    throw std::logic_error("compiler: graph " + std::string(graph_id_name(g.id)) +
                           ", captured once for every variant, touches the step-local " +
                           std::string(what));
  };
  for (const ComputationGraph& g : cp.graphs) {
    if (g.variant >= 0) continue;
    for (const GraphNode& n : g.nodes) {
      for (const auto* ids : {&n.inputs, &n.outputs})
        for (DTensorId id : *ids)
          if (plan.step_local(plan.get_dtensor(id).region))
            refuse(g, "'" + plan.get_dtensor(id).name + "'");
      for (const auto* spans : {&n.in_spans, &n.out_spans})
        for (const RegionSpan& s : *spans)
          for (int r = region_index(s.first); r <= region_index(s.last); ++r)
            if (plan.step_local(static_cast<Region>(r)) &&
                !plan.region(static_cast<Region>(r)).tensors.empty())
              refuse(g, region_name(static_cast<Region>(r)));
    }
  }
}

// ZeRO-2's gradient blocks: each gradient bucket of the G and H series lies
// in the pool as one block, its regions one after another in kind order
// (what the bucket's reduce-scatter and casts span), from the first use of
// any of its tensors to the last. -1 for a tensor outside them.
int gradient_block(const MemoryPlan& plan, const DTensor& t) {
  if (!plan.gradients_in_pool() || !plan.step_local(t.region) || is_step_local(t.region)) return -1;
  const std::optional<ParamKind> kind = region_param_kind(t.region);
  if (!kind) return -1;
  return (region_series(t.region) == 'G' ? 0 : 2) + bucket_of(*kind);
}

// Tensors that share one block: in-place chains (conv.out -> relu.out).
struct Blocks {
  std::vector<size_t> parent;  // per lifetime entry
  size_t root(size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  }
};

// The first position where the blocks live at once take the most bytes.
int peak_position(const std::vector<PoolItem>& items, size_t positions) {
  std::vector<int64_t> delta(positions + 1, 0);
  for (const PoolItem& it : items) {
    delta[static_cast<size_t>(it.first)] += static_cast<int64_t>(it.bytes);
    delta[static_cast<size_t>(it.last) + 1] -= static_cast<int64_t>(it.bytes);
  }
  int64_t live = 0, most = 0;
  int at = -1;
  for (size_t p = 0; p < positions; ++p) {
    live += delta[p];
    if (live > most) most = live, at = static_cast<int>(p);
  }
  return at;
}

}  // namespace

void pack_step_local(CompiledProject& cp) {
  refuse_shared_step_locals(cp);
  for (size_t v = 0; v < cp.plans.size(); ++v) {
    MemoryPlan& plan = cp.plans[v];
    const StepLifetimes life = step_lifetimes(cp, static_cast<int>(v));
    std::vector<int> entry(plan.dtensors().size(), -1);  // id -> index in life.tensors
    for (size_t i = 0; i < life.tensors.size(); ++i)
      if (life.tensors[i].first >= 0)
        entry[static_cast<size_t>(life.tensors[i].id)] = static_cast<int>(i);

    Blocks blocks{std::vector<size_t>(life.tensors.size())};
    std::iota(blocks.parent.begin(), blocks.parent.end(), size_t{0});
    std::vector<int> block_last(life.tensors.size());
    for (size_t i = 0; i < life.tensors.size(); ++i) block_last[i] = life.tensors[i].last;
    const ComputationGraph* g = nullptr;  // a graph's positions come one after another
    for (size_t p = 0; p < life.order.size(); ++p) {
      const StepPosition& at = life.order[p];
      if (!g || g->id != at.graph) g = cp.find_graph(at.graph, static_cast<int>(v));
      const GraphNode& n = g->nodes[static_cast<size_t>(at.node)];
      if (n.kind != NodeKind::COMPUTE || !compute_op_info(n.op).in_place || n.outputs.empty() ||
          n.accumulate_mask)
        continue;
      const int y = entry[static_cast<size_t>(n.outputs[0])];
      if (y < 0 || life.tensors[static_cast<size_t>(y)].first != static_cast<int>(p)) continue;
      const DTensor& ty = plan.get_dtensor(n.outputs[0]);
      if (gradient_block(plan, ty) >= 0) continue;
      for (DTensorId in : n.inputs) {
        const int x = in >= 0 ? entry[static_cast<size_t>(in)] : -1;
        if (x < 0 || in == n.outputs[0]) continue;
        const DTensor& tx = plan.get_dtensor(in);
        if (gradient_block(plan, tx) >= 0) continue;
        const size_t rx = blocks.root(static_cast<size_t>(x));
        // The input's block must end here: nothing reads its bytes later.
        if (block_last[rx] != static_cast<int>(p) || tx.dtype != ty.dtype ||
            !(tx.shape == ty.shape) || tx.slot_bytes != ty.slot_bytes)
          continue;
        blocks.parent[static_cast<size_t>(y)] = rx;
        block_last[rx] = life.tensors[static_cast<size_t>(y)].last;
        break;
      }
    }

    std::vector<PoolItem> items;
    std::vector<int> item_of(life.tensors.size(), -1);
    uint64_t slots = 0;
    // ZeRO-2's gradient blocks first: a member's place is its block's plus
    // the slots before it in region order (a region's tensors in their order).
    constexpr int kGradientBlocks = 4;
    int block_item[kGradientBlocks] = {-1, -1, -1, -1};
    std::vector<uint64_t> within(plan.dtensors().size(), 0);
    std::vector<bool> member(life.tensors.size(), false);
    for (int r = 0; r < kNumRegions; ++r)
      for (DTensorId id : plan.region(static_cast<Region>(r)).tensors) {
        const int b = gradient_block(plan, plan.get_dtensor(id));
        const int e = entry[static_cast<size_t>(id)];
        if (b < 0 || e < 0) continue;
        const TensorLifetime& l = life.tensors[static_cast<size_t>(e)];
        if (block_item[b] < 0) {
          block_item[b] = static_cast<int>(items.size());
          items.push_back({0, l.first, l.last});
        }
        PoolItem& it = items[static_cast<size_t>(block_item[b])];
        within[static_cast<size_t>(id)] = it.bytes;
        it.bytes += plan.get_dtensor(id).slot_bytes;
        it.first = std::min(it.first, l.first);
        it.last = std::max(it.last, l.last);
        item_of[static_cast<size_t>(e)] = block_item[b];
        member[static_cast<size_t>(e)] = true;
        slots += plan.get_dtensor(id).slot_bytes;
      }
    for (size_t i = 0; i < life.tensors.size(); ++i) {
      const TensorLifetime& l = life.tensors[i];
      if (l.first < 0 || member[i]) continue;
      slots += plan.get_dtensor(l.id).slot_bytes;
      const size_t r = blocks.root(i);
      if (item_of[r] < 0) {
        item_of[r] = static_cast<int>(items.size());
        items.push_back({0, l.first, l.last});
      }
      PoolItem& it = items[static_cast<size_t>(item_of[r])];
      it.bytes = std::max(it.bytes, plan.get_dtensor(l.id).slot_bytes);
      it.first = std::min(it.first, l.first);
      it.last = std::max(it.last, l.last);
    }
    const PoolPacking packing = pack_pool(items);
    if (const auto bad = pool_conflicts(items, packing.offsets); !bad.empty())
      throw std::logic_error("compiler: packing gave two blocks of variant '" +
                             cp.variants[v].name + "' the same bytes while both are live");
    PoolPlacement placement;
    placement.offsets.assign(plan.dtensors().size(), 0);
    placement.used.assign(plan.dtensors().size(), false);
    placement.bytes = packing.bytes;
    for (size_t i = 0; i < life.tensors.size(); ++i) {
      if (life.tensors[i].first < 0) continue;
      const auto id = static_cast<size_t>(life.tensors[i].id);
      const int item = member[i] ? item_of[i] : item_of[blocks.root(i)];
      placement.offsets[id] = packing.offsets[static_cast<size_t>(item)] + within[id];
      placement.used[id] = true;
    }
    plan.finalize(placement);
    cp.pools.push_back({slots, packing.bytes, pool_lower_bound(items),
                        peak_position(items, life.order.size()), packing.strategy});
  }
}

}  // namespace tr

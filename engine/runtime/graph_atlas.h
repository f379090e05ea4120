// SPDX-License-Identifier: GPL-3.0-or-later
// GraphAtlas: per rank, the captured graph for every (GraphId, variant), with
// shape-invariant graphs captured once and shared by all variants.
#pragma once

#include <memory>
#include <vector>

#include "runtime/backend.h"
#include "runtime/graph_resolver.h"

namespace tr {

struct AtlasSlot {
  ResolvedGraph resolved;  // owns the KernelArgs the captured launches point to
  GraphHandle handle = -1;
  StreamKind stream = StreamKind::COMP_1;
};

class GraphAtlas {
 public:
  explicit GraphAtlas(int variants) : variants_(variants) {
    slots_.resize(static_cast<size_t>(kNumGraphIds * (variants + 1)));
  }
  // `variant` -1 for a shared graph.
  void put(GraphId id, int variant, std::unique_ptr<AtlasSlot> slot) {
    slots_[index(id, variant)] = std::move(slot);
  }
  // The graph for `id` in `variant`, falling back to the shared one; null if none.
  const AtlasSlot* find(GraphId id, int variant) const {
    if (const auto& s = slots_[index(id, variant)]) return s.get();
    return slots_[index(id, -1)].get();
  }

 private:
  size_t index(GraphId id, int variant) const {
    return static_cast<size_t>(static_cast<int>(id) * (variants_ + 1) + variant + 1);
  }
  int variants_;
  std::vector<std::unique_ptr<AtlasSlot>> slots_;
};

}  // namespace tr

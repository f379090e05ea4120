// SPDX-License-Identifier: GPL-3.0-or-later
#include "pool_blocks.h"

#include <QCoreApplication>
#include <algorithm>
#include <limits>
#include <set>

namespace tr::gui {

namespace {

BlockKind kind_of(Region r) {
  switch (r) {
    case Region::F_FEATURE_FP16:
      return BlockKind::FeatureFp16;
    case Region::F_FEATURE_BF16:
      return BlockKind::FeatureBf16;
    case Region::F_GRAD_SLOT_FP32:
    case Region::F_GRAD_SLOT_FP16:
    case Region::F_GRAD_SLOT_BF16:
      return BlockKind::GradSlot;
    case Region::T_SCRATCH:
      return BlockKind::Scratch;
    default:
      return BlockKind::FeatureFp32;
  }
}

}  // namespace

QString block_kind_name(BlockKind kind) {
  switch (kind) {
    case BlockKind::FeatureFp32:
      return QCoreApplication::translate("PoolBlocks", "feature FP32");
    case BlockKind::FeatureFp16:
      return QCoreApplication::translate("PoolBlocks", "feature FP16");
    case BlockKind::FeatureBf16:
      return QCoreApplication::translate("PoolBlocks", "feature BF16");
    case BlockKind::GradSlot:
      return QCoreApplication::translate("PoolBlocks", "gradient slot");
    case BlockKind::Scratch:
      return QCoreApplication::translate("PoolBlocks", "scratch");
  }
  return {};
}

PoolBlocks::PoolBlocks(const CompiledPlan& cp, int variant)
    : variant_(variant), lifetimes_(step_lifetimes(cp, variant)) {
  const MemoryPlan& plan = cp.plans().at(static_cast<size_t>(variant));
  packed_ = plan.packed();
  index_of_.assign(plan.dtensors().size(), -1);
  uint64_t low = std::numeric_limits<uint64_t>::max(), high = 0;
  for (const TensorLifetime& l : lifetimes_.tensors) {
    // Untouched by this variant's step: a packed plan gives it no bytes.
    if (l.first < 0 || !plan.in_use(l.id)) continue;
    const DTensor& t = plan.get_dtensor(l.id);
    index_of_[static_cast<size_t>(l.id)] = static_cast<int>(blocks_.size());
    // The compiler names a recomputed output's copy "<layer>.recomputed".
    blocks_.push_back({l.id, l.first, l.last, t.offset, t.slot_bytes, kind_of(t.region),
                       t.name.ends_with(".recomputed")});
    low = std::min(low, t.offset);
    high = std::max(high, t.offset + t.slot_bytes);
    slot_bytes_ += t.slot_bytes;
  }
  if (packed_) {
    base_ = plan.pool().offset;
    bytes_ = plan.pool().bytes;
  } else {
    base_ = blocks_.empty() ? 0 : low;
    bytes_ = blocks_.empty() ? 0 : high - low;
  }
  for (PoolBlock& b : blocks_) b.offset -= base_;

  // An output written in place over its input takes no bytes of its own at
  // the node where one ends and the other begins.
  std::set<std::pair<uint64_t, int>> ends;  // (offset, last)
  for (const PoolBlock& b : blocks_) ends.emplace(b.offset, b.last);
  std::vector<int64_t> delta(static_cast<size_t>(positions()) + 1, 0);
  for (const PoolBlock& b : blocks_) {
    const int from = packed_ && ends.count({b.offset, b.first}) ? b.first + 1 : b.first;
    if (from > b.last) continue;
    delta[static_cast<size_t>(from)] += static_cast<int64_t>(b.bytes);
    delta[static_cast<size_t>(b.last) + 1] -= static_cast<int64_t>(b.bytes);
  }
  live_.assign(static_cast<size_t>(positions()), 0);
  int64_t live = 0;
  for (size_t p = 0; p < live_.size(); ++p) {
    live += delta[p];
    live_[p] = static_cast<uint64_t>(live);
    if (live_[p] > peak_) {
      peak_ = live_[p];
      peak_position_ = static_cast<int>(p);
    }
  }
}

int PoolBlocks::indexOf(DTensorId id) const {
  return id >= 0 && static_cast<size_t>(id) < index_of_.size() ? index_of_[static_cast<size_t>(id)]
                                                               : -1;
}

void PoolBlocks::byFirstUse(std::vector<int>& indexes) const {
  std::sort(indexes.begin(), indexes.end(), [this](int a, int b) {
    const PoolBlock& x = blocks_[static_cast<size_t>(a)];
    const PoolBlock& y = blocks_[static_cast<size_t>(b)];
    return x.first != y.first ? x.first < y.first : x.id < y.id;
  });
}

std::vector<int> PoolBlocks::at(uint64_t offset) const {
  std::vector<int> out;
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (offset >= blocks_[i].offset && offset < blocks_[i].end())
      out.push_back(static_cast<int>(i));
  byFirstUse(out);
  return out;
}

std::vector<int> PoolBlocks::sharing(int i) const {
  std::vector<int> out;
  if (i < 0 || static_cast<size_t>(i) >= blocks_.size()) return out;
  const PoolBlock& b = blocks_[static_cast<size_t>(i)];
  for (size_t j = 0; j < blocks_.size(); ++j)
    if (static_cast<int>(j) != i && blocks_[j].offset < b.end() && b.offset < blocks_[j].end())
      out.push_back(static_cast<int>(j));
  byFirstUse(out);
  return out;
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// PoolBlocks: one variant's step-local tensors (features, gradient slots,
// scratch) as blocks in time and address. Each lives over [first, last] of
// the step's node order (compile/lifetimes.h) at its slot in the pool. Built
// once per plan and variant, before any run, for the memory view's strip and
// its lifetime chart, which ask which tensors an address holds over the
// step and which tensors share bytes. Unpacked plans give their blocks at
// their own offsets, from the first step-local tensor on.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/step_lifetimes.h>

namespace tr::gui {

enum class BlockKind : uint8_t { FeatureFp32, FeatureFp16, FeatureBf16, GradSlot, Scratch };
inline constexpr int kNumBlockKinds = 5;

QString block_kind_name(BlockKind kind);  // "feature FP32", "gradient slot", ...

struct PoolBlock {
  DTensorId id = kNoTensor;
  int first = 0, last = 0;  // positions in the step's node order, both live
  uint64_t offset = 0;      // from base()
  uint64_t bytes = 0;       // the tensor's slot in this variant
  BlockKind kind = BlockKind::FeatureFp32;
  bool recomputed = false;  // a layer's output computed again in the backward
  uint64_t end() const { return offset + bytes; }
};

class PoolBlocks {
 public:
  PoolBlocks() = default;
  PoolBlocks(const CompiledPlan& cp, int variant);

  int variant() const { return variant_; }
  bool packed() const { return packed_; }
  // Where offset 0 of the blocks is in the arena: the pool's start, or
  // (unpacked) the lowest step-local tensor's offset.
  uint64_t base() const { return base_; }
  // Packed: the pool's size. Unpacked: from base() to the end of the highest block.
  uint64_t bytes() const { return bytes_; }
  // The blocks' slots added up: what the pool takes without packing.
  uint64_t slotBytes() const { return slot_bytes_; }
  // The most slot bytes live at one position, which no packing goes under.
  uint64_t peakLiveBytes() const { return peak_; }
  int peakPosition() const { return peak_position_; }
  const std::vector<uint64_t>& liveBytes() const { return live_; }  // per position

  int positions() const { return static_cast<int>(lifetimes_.order.size()); }
  const StepLifetimes& lifetimes() const { return lifetimes_; }
  // The tensors this variant uses, by id.
  const std::vector<PoolBlock>& blocks() const { return blocks_; }
  int indexOf(DTensorId id) const;  // -1: not a block
  // The blocks holding the byte at `offset` (from base()) at some time in
  // the step, by first use.
  std::vector<int> at(uint64_t offset) const;
  // The other blocks whose bytes overlap block `i`'s, by first use: packed,
  // they live at other times.
  std::vector<int> sharing(int i) const;

 private:
  void byFirstUse(std::vector<int>& indexes) const;

  int variant_ = -1;
  bool packed_ = false;
  uint64_t base_ = 0, bytes_ = 0, slot_bytes_ = 0, peak_ = 0;
  int peak_position_ = -1;
  StepLifetimes lifetimes_;
  std::vector<PoolBlock> blocks_;
  std::vector<int> index_of_;  // per DTensor id
  std::vector<uint64_t> live_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryPlan: the blueprint of one rank's arena for one shape variant.
// Tensors are requested through semantic calls that pick their Region.
// Unpacked, finalize() lays the regions out in enum order with one cursor
// (no gaps, no runtime allocator) and unify_variants() gives every DTensor id
// the largest slot any variant needs, so an id has one offset in every
// variant. Packed, the step-local regions (F, T, S) leave the cursor: they form
// one pool after every other region, where each variant places its own
// tensors by lifetime (PoolPlacement); every other id keeps one offset in
// all variants.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <renaissance/dtensor.h>
#include <renaissance/region.h>

namespace tr {

// How a variant's step-local tensors are packed into its pool (plan/pool_packing.h).
enum class PackingStrategy : uint8_t {
  // Largest first, each into the smallest gap that fits among the items it
  // overlaps in time (the arena planners of TFLite and ExecuTorch).
  GREEDY_BY_SIZE,
  // In order of first use, each into the lowest gap that fits.
  FIRST_FIT_BY_START,
};
std::string_view packing_strategy_name(PackingStrategy s) noexcept;

struct ByteRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t end() const noexcept { return offset + bytes; }
  bool operator==(const ByteRange&) const noexcept = default;
};

struct RegionInfo {
  // Unpacked: the region's bytes. Packed step-local region: from its lowest
  // tensor to the end of its highest, sharing bytes with the pool's other regions.
  uint64_t base_offset = 0;
  uint64_t total_bytes = 0;
  uint64_t slot_bytes = 0;         // its tensors' slots added up (= total_bytes unpacked)
  bool packed = false;             // its tensors live in the step-local pool
  std::vector<DTensorId> tensors;  // in allocation order (= address order unpacked)
};

// One variant's step-local tensors inside the pool: offsets from the pool's
// start, indexed by DTensor id (other regions' entries are ignored).
struct PoolPlacement {
  std::vector<uint64_t> offsets;
  std::vector<bool> used;  // false: the variant never touches the tensor
  uint64_t bytes = 0;      // the pool's size for this variant
};

enum class InputBuffer : uint8_t { A, B };

class MemoryPlan {
 public:
  explicit MemoryPlan(std::string variant_name = "train") : variant_(std::move(variant_name)) {}

  // Semantic allocation. `owner` is the model node index (-1: the engine's own).
  // `half`: the element type of the A and H series (FP16 or BF16); the others are FP32.
  DTensorId alloc_param(ParamSeries series, ParamKind kind, const Shape& shape, std::string name,
                        int owner, DType half);
  // One rank's share of a span of `global_elements` floats split over the
  // data-parallel ranks (the optimizer state of a gradient bucket under
  // ZeRO-1, in a region of the M or V series; its summed gradients under
  // ZeRO-2, in the Q series), `elements` long.
  DTensorId alloc_shard(Region region, int64_t elements, int64_t global_elements, std::string name);
  DTensorId alloc_bn_stat(Region region, int64_t channels, std::string name, int owner);
  DTensorId alloc_bn_saved(int64_t channels, std::string name, int owner);
  // Layer norm's: each position's mean and 1/std, side by side ([N,H,W,2] for x [N,H,W,C]).
  DTensorId alloc_layer_norm_saved(const Shape& x, std::string name, int owner);
  // Attention's: each token's and head's log-sum-exp of its scores ([N,H,W,heads]).
  DTensorId alloc_attention_saved(const Shape& x, int64_t heads, std::string name, int owner);
  DTensorId alloc_feature(const Shape& shape, DType dtype, std::string name, int owner);
  DTensorId alloc_grad_slot(const Shape& shape, DType dtype, std::string name, int owner);
  DTensorId alloc_input(InputBuffer buffer, const Shape& shape, DType dtype);
  DTensorId alloc_label(InputBuffer buffer, int64_t batch);
  DTensorId alloc_active_label(int64_t batch);
  DTensorId alloc_mask(const Shape& shape, std::string name, int owner);
  DTensorId alloc_result(bool accumulated);
  // classes x classes FP32 counts, row = true label, column = predicted class.
  DTensorId alloc_confusion(int64_t classes);
  DTensorId alloc_scalars(int64_t count, std::string name);
  DTensorId alloc_lars_norm(ParamKind kind, std::string name, int owner);
  DTensorId alloc_scratch(const Shape& shape, DType dtype, std::string name, int owner);

  // ZeRO-2: the full gradients (the G and H series) live in the step-local
  // pool, each gradient bucket of each series one block there, from its
  // first write to its reduce-scatter. Set before finalize.
  void set_gradients_in_pool(bool on);
  // Whether the tensors allocated from now on pad their channels as CUDA's
  // kernels need (DTensor::pad_channels; on unless told otherwise).
  void set_channel_padding(bool on) noexcept { pad_channels_ = on; }
  // Tensor parallel: `id` is a tensor rank's part of a whole tensor
  // (DTensor::tensor_placement and tensor_blocks).
  void set_tensor_placement(DTensorId id, Placement placement, int blocks);
  // `id`'s channels lie in blocks of `block` (DTensor::channel_block; 0:
  // innermost). The bytes are the same, so it may follow finalize.
  void set_channel_block(DTensorId id, int block);
  bool gradients_in_pool() const noexcept { return gradients_in_pool_; }
  // Whether `r` is step-local in this plan: is_step_local(r), or a region
  // of the G or H series when the gradients are in the pool.
  bool step_local(Region r) const noexcept;
  // Lays out all regions in enum order. Further allocation is a logic error.
  void finalize();
  // Lays out every region but the step-local ones in enum order, then the
  // pool with `pool`'s offsets (multiples of 256, checked).
  void finalize(const PoolPlacement& pool);
  // A packed plan's pool placed anew, with finalize's checks (alignment,
  // bounds) and nothing about lifetimes: for comparing placements, and for
  // tests that prove a wrong one is caught where it is used.
  void replace_pool(const PoolPlacement& pool);
  // The placement a packed plan has now.
  PoolPlacement pool_placement() const;
  bool finalized() const noexcept { return finalized_; }
  bool packed() const noexcept { return packed_; }
  // The step-local pool ({end of the other regions, 0} when unpacked).
  ByteRange pool() const noexcept { return pool_; }
  // False for a step-local tensor of a packed plan that this variant never
  // touches: it has no bytes of its own (its offset is the pool's start).
  bool in_use(DTensorId id) const;

  const std::string& variant_name() const noexcept { return variant_; }
  const DTensor& get_dtensor(DTensorId id) const;
  const std::vector<DTensor>& dtensors() const noexcept { return tensors_; }
  const RegionInfo& region(Region r) const noexcept {
    return regions_[static_cast<size_t>(region_index(r))];
  }
  // Bytes from the start of `first` to the end of `last` (inclusive, first <=
  // last). In a packed plan the span's step-local regions must lie one after
  // another in the pool (a gradient bucket's), else it is a logic error.
  ByteRange region_range(Region first, Region last) const;
  ByteRange comm_bucket_deep() const { return region_range(Region::G_DEEP_CONV, Region::R_RESULT); }
  ByteRange comm_bucket_first() const {
    return region_range(Region::G_BN_BIAS, Region::G_FIRST_CONV);
  }
  // This variant's bytes: every region, the pool at this variant's size.
  uint64_t total_bytes() const noexcept { return total_bytes_; }
  // The step-local tensors' slots added up: what the pool would take if no
  // two of them shared bytes (the tensors in use, when packed).
  uint64_t step_local_slot_bytes() const noexcept;

  // Grows a slot before finalize (used to unify variants); never shrinks.
  void raise_slot(DTensorId id, uint64_t slot_bytes);

 private:
  DTensorId alloc(Region region, const Shape& shape, DType dtype, std::string name, int owner);
  void lay_out(bool skip_step_local, uint64_t& cursor);
  void place(const PoolPlacement& pool);

  std::string variant_;
  std::vector<DTensor> tensors_;
  std::vector<RegionInfo> regions_ = std::vector<RegionInfo>(kNumRegions);
  std::vector<bool> unused_;  // packed: step-local tensors the variant never touches
  ByteRange pool_;
  uint64_t total_bytes_ = 0;
  bool finalized_ = false;
  bool packed_ = false;
  bool gradients_in_pool_ = false;
  bool pad_channels_ = true;
};

// Phase 2 of compilation: the plans were built by the same sequence of
// semantic calls with each variant's shapes; this checks that they line up
// tensor by tensor and raises every slot to the maximum across variants (the
// step-local ones too when `step_local_too`), so that laying them out gives
// every such id one offset in all plans.
void unify_variants(std::vector<MemoryPlan>& plans, bool step_local_too);
// The unpacked plan: unify_variants(plans, true) and finalize() each.
void finalize_variants(std::vector<MemoryPlan>& plans);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryPlan: the blueprint of one rank's arena for one shape variant.
// Tensors are requested through semantic calls that pick their Region;
// finalize() lays the regions out in enum order with one cursor, so there
// are no gaps and no runtime allocator. finalize_variants() gives every
// DTensor id the largest slot any variant needs, so an id has the same
// offset in every variant of a compiled project.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/dtensor.h"
#include "plan/region.h"

namespace tr {

struct ByteRange {
  uint64_t offset = 0;
  uint64_t bytes = 0;
  uint64_t end() const noexcept { return offset + bytes; }
  bool operator==(const ByteRange&) const noexcept = default;
};

struct RegionInfo {
  uint64_t base_offset = 0;
  uint64_t total_bytes = 0;
  std::vector<DTensorId> tensors;  // in allocation order (= address order)
};

enum class InputBuffer : uint8_t { A, B };

class MemoryPlan {
 public:
  explicit MemoryPlan(std::string variant_name = "train") : variant_(std::move(variant_name)) {}

  // Semantic allocation. `owner` is the model node index (-1: the engine's own).
  DTensorId alloc_param(ParamSeries series, ParamKind kind, const Shape& shape, std::string name,
                        int owner);
  DTensorId alloc_bn_stat(Region region, int64_t channels, std::string name, int owner);
  DTensorId alloc_bn_saved(int64_t channels, std::string name, int owner);
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

  // Lays out all regions. Further allocation is a logic error.
  void finalize();
  bool finalized() const noexcept { return finalized_; }

  const std::string& variant_name() const noexcept { return variant_; }
  const DTensor& get_dtensor(DTensorId id) const;
  const std::vector<DTensor>& dtensors() const noexcept { return tensors_; }
  const RegionInfo& region(Region r) const noexcept {
    return regions_[static_cast<size_t>(region_index(r))];
  }
  // Bytes from the start of `first` to the end of `last` (inclusive, first <= last).
  ByteRange region_range(Region first, Region last) const;
  ByteRange comm_bucket_deep() const { return region_range(Region::G_DEEP_CONV, Region::R_RESULT); }
  ByteRange comm_bucket_first() const {
    return region_range(Region::G_BN_BIAS, Region::G_FIRST_CONV);
  }
  uint64_t total_bytes() const noexcept { return total_bytes_; }

  // Grows a slot before finalize (used to unify variants); never shrinks.
  void raise_slot(DTensorId id, uint64_t slot_bytes);

 private:
  DTensorId alloc(Region region, const Shape& shape, DType dtype, std::string name, int owner);

  std::string variant_;
  std::vector<DTensor> tensors_;
  std::vector<RegionInfo> regions_ = std::vector<RegionInfo>(kNumRegions);
  uint64_t total_bytes_ = 0;
  bool finalized_ = false;
};

// Phase 2 and 3 of compilation: the plans were built by the same sequence of
// semantic calls with each variant's shapes; this checks that they line up
// tensor by tensor, raises every slot to the maximum across variants and
// finalizes them all. Afterwards every id has one offset in all plans.
void finalize_variants(std::vector<MemoryPlan>& plans);

}  // namespace tr

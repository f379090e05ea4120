// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/memory_plan.h>

#include <algorithm>
#include <stdexcept>

namespace tr {

namespace {

// Which element types a region may hold; a mismatch is a compiler bug.
bool region_accepts(Region r, DType t) {
  const char s = region_series(r);
  switch (r) {
    case Region::I_A_DATA:
    case Region::I_B_DATA:
      return t == DType::FP32 || is_16bit_float(t);
    case Region::I_A_LABEL:
    case Region::I_B_LABEL:
    case Region::I_ACTIVE_LABEL:
      return t == DType::INT32;
    case Region::F_FEATURE_FP16:
    case Region::F_GRAD_SLOT_FP16:
      return t == DType::FP16;
    case Region::F_FEATURE_BF16:
    case Region::F_GRAD_SLOT_BF16:
      return t == DType::BF16;
    case Region::S_MASK:
      return t == DType::INT8;
    case Region::T_SCRATCH:
      return true;
    default:
      break;
  }
  if (s == 'A' || s == 'H') return is_16bit_float(t);
  return t == DType::FP32;
}

}  // namespace

DTensorId MemoryPlan::alloc(Region region, const Shape& shape, DType dtype, std::string name,
                            int owner) {
  if (finalized_) throw std::logic_error("MemoryPlan: allocation after finalize: " + name);
  if (!region_accepts(region, dtype))
    throw std::logic_error("MemoryPlan: " + std::string(dtype_name(dtype)) + " tensor '" + name +
                           "' cannot live in " + std::string(region_name(region)));
  if (shape.n <= 0 || shape.h <= 0 || shape.w <= 0 || shape.c <= 0)
    throw std::logic_error("MemoryPlan: empty shape " + shape.str() + " for '" + name + "'");
  DTensor t;
  t.id = static_cast<DTensorId>(tensors_.size());
  t.name = std::move(name);
  t.owner = owner;
  t.shape = shape;
  t.dtype = dtype;
  t.region = region;
  t.pad_channels = pad_channels_;
  t.slot_bytes = DTensor::slot_bytes_for(shape, dtype, region, pad_channels_);
  regions_[static_cast<size_t>(region_index(region))].tensors.push_back(t.id);
  tensors_.push_back(std::move(t));
  return tensors_.back().id;
}

DTensorId MemoryPlan::alloc_param(ParamSeries series, ParamKind kind, const Shape& shape,
                                  std::string name, int owner, DType half) {
  const bool sixteen = series == ParamSeries::A || series == ParamSeries::H;
  const DTensorId id = alloc(param_region(series, kind), shape, sixteen ? half : DType::FP32,
                             std::move(name), owner);
  // Each rank's gradient is its addend until the bucket's all-reduce.
  if (series == ParamSeries::G || series == ParamSeries::H)
    tensors_.back().placement = {PlacementKind::Partial, 0};
  return id;
}

void MemoryPlan::set_tensor_placement(DTensorId id, Placement placement, int blocks) {
  DTensor& d = tensors_.at(static_cast<size_t>(id));
  d.tensor_placement = placement;
  d.tensor_blocks = blocks;
}

void MemoryPlan::set_channel_block(DTensorId id, int block) {
  DTensor& d = tensors_.at(static_cast<size_t>(id));
  if (block != 0 && (d.pad_channels || d.shape.c % block != 0))
    throw std::logic_error("MemoryPlan: " + d.name + " (C = " + std::to_string(d.shape.c) +
                           ") cannot lie in channel blocks of " + std::to_string(block));
  d.channel_block = block;
}

DTensorId MemoryPlan::alloc_shard(Region region, int64_t elements, int64_t global_elements,
                                  std::string name) {
  const char s = region_series(region);
  if (s != 'M' && s != 'V' && s != 'Q')
    throw std::logic_error("MemoryPlan: a shard outside M, V and Q: " + name);
  const DTensorId id = alloc(region, {1, 1, 1, elements}, DType::FP32, std::move(name), -1);
  tensors_.back().placement = {PlacementKind::Shard, 0};
  tensors_.back().global_elements = global_elements;
  return id;
}

DTensorId MemoryPlan::alloc_bn_stat(Region region, int64_t channels, std::string name, int owner) {
  if (region_series(region) != 'B')
    throw std::logic_error("MemoryPlan: alloc_bn_stat outside the B series");
  return alloc(region, {1, 1, 1, channels}, DType::FP32, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_bn_saved(int64_t channels, std::string name, int owner) {
  // mean and inverse standard deviation of the batch, side by side
  return alloc(Region::S_BN_SAVED, {1, 1, 2, channels}, DType::FP32, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_layer_norm_saved(const Shape& x, std::string name, int owner) {
  return alloc(Region::S_BN_SAVED, {x.n, x.h, x.w, 2}, DType::FP32, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_attention_saved(const Shape& x, int64_t heads, std::string name,
                                            int owner) {
  return alloc(Region::S_BN_SAVED, {x.n, x.h, x.w, heads}, DType::FP32, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_feature(const Shape& shape, DType dtype, std::string name, int owner) {
  const Region r = dtype == DType::FP16   ? Region::F_FEATURE_FP16
                   : dtype == DType::BF16 ? Region::F_FEATURE_BF16
                                          : Region::F_FEATURE_FP32;
  return alloc(r, shape, dtype, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_grad_slot(const Shape& shape, DType dtype, std::string name,
                                      int owner) {
  const Region r = dtype == DType::FP16   ? Region::F_GRAD_SLOT_FP16
                   : dtype == DType::BF16 ? Region::F_GRAD_SLOT_BF16
                                          : Region::F_GRAD_SLOT_FP32;
  return alloc(r, shape, dtype, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_input(InputBuffer buffer, const Shape& shape, DType dtype) {
  const bool a = buffer == InputBuffer::A;
  return alloc(a ? Region::I_A_DATA : Region::I_B_DATA, shape, dtype, a ? "input.A" : "input.B",
               -1);
}

DTensorId MemoryPlan::alloc_label(InputBuffer buffer, int64_t batch) {
  const bool a = buffer == InputBuffer::A;
  return alloc(a ? Region::I_A_LABEL : Region::I_B_LABEL, {batch, 1, 1, 1}, DType::INT32,
               a ? "labels.A" : "labels.B", -1);
}

DTensorId MemoryPlan::alloc_active_label(int64_t batch) {
  return alloc(Region::I_ACTIVE_LABEL, {batch, 1, 1, 1}, DType::INT32, "labels.active", -1);
}

DTensorId MemoryPlan::alloc_mask(const Shape& shape, std::string name, int owner) {
  return alloc(Region::S_MASK, shape, DType::INT8, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_result(bool accumulated) {
  // loss sum, top-1 count, top-5 count, sample count
  return alloc(accumulated ? Region::R_RESULT_ACCUMULATED : Region::R_RESULT, {1, 1, 1, 4},
               DType::FP32, accumulated ? "result.accumulated" : "result", -1);
}

DTensorId MemoryPlan::alloc_confusion(int64_t classes) {
  return alloc(Region::R_CONFUSION, {1, 1, classes, classes}, DType::FP32, "confusion", -1);
}

DTensorId MemoryPlan::alloc_scalars(int64_t count, std::string name) {
  return alloc(Region::S_SCALARS, {1, 1, 1, count}, DType::FP32, std::move(name), -1);
}

DTensorId MemoryPlan::alloc_lars_norm(ParamKind kind, std::string name, int owner) {
  Region r = Region::N_DEEP_CONV;
  if (kind == ParamKind::FC_BIAS || kind == ParamKind::FC_WEIGHT) r = Region::N_FC;
  if (kind == ParamKind::FIRST_CONV) r = Region::N_FIRST_CONV;
  if (is_bn_param(kind))
    throw std::logic_error("MemoryPlan: LARS keeps no norms for batch-norm parameters");
  // weight norm and gradient norm
  return alloc(r, {1, 1, 1, 2}, DType::FP32, std::move(name), owner);
}

DTensorId MemoryPlan::alloc_scratch(const Shape& shape, DType dtype, std::string name, int owner) {
  return alloc(Region::T_SCRATCH, shape, dtype, std::move(name), owner);
}

void MemoryPlan::raise_slot(DTensorId id, uint64_t slot_bytes) {
  if (finalized_) throw std::logic_error("MemoryPlan: raise_slot after finalize");
  DTensor& t = tensors_.at(static_cast<size_t>(id));
  t.slot_bytes = std::max(t.slot_bytes, slot_bytes);
}

void MemoryPlan::lay_out(bool skip_step_local, uint64_t& cursor) {
  for (int r = 0; r < kNumRegions; ++r) {
    RegionInfo& info = regions_[static_cast<size_t>(r)];
    if (skip_step_local && step_local(static_cast<Region>(r))) continue;
    info.base_offset = cursor;
    for (DTensorId id : info.tensors) {
      DTensor& t = tensors_[static_cast<size_t>(id)];
      t.offset = cursor;
      cursor += t.slot_bytes;
    }
    info.total_bytes = cursor - info.base_offset;
    info.slot_bytes = info.total_bytes;
  }
}

void MemoryPlan::set_gradients_in_pool(bool on) {
  if (finalized_) throw std::logic_error("MemoryPlan: set_gradients_in_pool after finalize");
  gradients_in_pool_ = on;
}

bool MemoryPlan::step_local(Region r) const noexcept {
  if (is_step_local(r)) return true;
  const char s = region_series(r);
  return gradients_in_pool_ && region_param_kind(r) && (s == 'G' || s == 'H');
}

void MemoryPlan::finalize() {
  if (finalized_) return;
  uint64_t cursor = 0;
  lay_out(false, cursor);
  pool_ = {cursor, 0};
  total_bytes_ = cursor;
  finalized_ = true;
}

void MemoryPlan::finalize(const PoolPlacement& pool) {
  if (finalized_) throw std::logic_error("MemoryPlan: finalize twice");
  uint64_t cursor = 0;
  lay_out(true, cursor);
  pool_ = {cursor, 0};
  place(pool);
  finalized_ = true;
  packed_ = true;
}

void MemoryPlan::replace_pool(const PoolPlacement& pool) {
  if (!packed_) throw std::logic_error("MemoryPlan: replace_pool on a plan that is not packed");
  place(pool);
}

void MemoryPlan::place(const PoolPlacement& pool) {
  if (pool.offsets.size() != tensors_.size() || pool.used.size() != tensors_.size())
    throw std::logic_error("MemoryPlan: a pool placement for " +
                           std::to_string(pool.offsets.size()) + " tensors, the plan has " +
                           std::to_string(tensors_.size()));
  pool_.bytes = pool.bytes;
  unused_.assign(tensors_.size(), false);
  for (int r = 0; r < kNumRegions; ++r) {
    if (!step_local(static_cast<Region>(r))) continue;
    RegionInfo& info = regions_[static_cast<size_t>(r)];
    info.packed = true;
    info.slot_bytes = 0;
    uint64_t low = pool_.end(), high = pool_.offset;
    for (DTensorId id : info.tensors) {
      const auto i = static_cast<size_t>(id);
      DTensor& t = tensors_[i];
      t.offset = pool_.offset;
      if (!pool.used[i]) {
        unused_[i] = true;
        continue;
      }
      const uint64_t at = pool.offsets[i];
      if (at % 256 != 0 || at + t.slot_bytes > pool.bytes)
        throw std::logic_error("MemoryPlan: pool offset " + std::to_string(at) + " of '" + t.name +
                               "' (" + std::to_string(t.slot_bytes) + " bytes) is unaligned or " +
                               "outside a pool of " + std::to_string(pool.bytes) + " bytes");
      t.offset = pool_.offset + at;
      low = std::min(low, t.offset);
      high = std::max(high, t.offset + t.slot_bytes);
      info.slot_bytes += t.slot_bytes;
    }
    info.base_offset = low < high ? low : pool_.offset;
    info.total_bytes = low < high ? high - low : 0;
  }
  total_bytes_ = pool_.end();
}

PoolPlacement MemoryPlan::pool_placement() const {
  PoolPlacement p;
  p.offsets.assign(tensors_.size(), 0);
  p.used.assign(tensors_.size(), false);
  p.bytes = pool_.bytes;
  if (!packed_) return p;
  for (const DTensor& t : tensors_)
    if (step_local(t.region) && !unused_[static_cast<size_t>(t.id)]) {
      p.offsets[static_cast<size_t>(t.id)] = t.offset - pool_.offset;
      p.used[static_cast<size_t>(t.id)] = true;
    }
  return p;
}

bool MemoryPlan::in_use(DTensorId id) const {
  get_dtensor(id);  // range check
  return unused_.empty() || !unused_[static_cast<size_t>(id)];
}

uint64_t MemoryPlan::step_local_slot_bytes() const noexcept {
  uint64_t sum = 0;
  for (const DTensor& t : tensors_)
    if (step_local(t.region) && (unused_.empty() || !unused_[static_cast<size_t>(t.id)]))
      sum += t.slot_bytes;
  return sum;
}

const DTensor& MemoryPlan::get_dtensor(DTensorId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tensors_.size())
    throw std::out_of_range("MemoryPlan: no DTensor with id " + std::to_string(id));
  return tensors_[static_cast<size_t>(id)];
}

ByteRange MemoryPlan::region_range(Region first, Region last) const {
  if (!finalized_) throw std::logic_error("MemoryPlan: region_range before finalize");
  if (region_index(first) > region_index(last))
    throw std::logic_error("MemoryPlan: region_range with first after last");
  bool pooled = false;
  for (int r = region_index(first); r <= region_index(last); ++r) {
    if (packed_ && is_step_local(static_cast<Region>(r)))
      throw std::logic_error("MemoryPlan: a span over " +
                             std::string(region_name(static_cast<Region>(r))) +
                             ", whose tensors a packed plan places by lifetime");
    pooled |= packed_ && step_local(static_cast<Region>(r));
  }
  if (!pooled) {
    const RegionInfo& a = region(first);
    const RegionInfo& b = region(last);
    return {a.base_offset, b.base_offset + b.total_bytes - a.base_offset};
  }
  // A span into the pool: its regions' bytes one after another (a gradient
  // bucket's block); regions that hold no bytes here have no place of their own.
  ByteRange out{pool_.offset, 0};
  for (int r = region_index(first); r <= region_index(last); ++r) {
    const RegionInfo& info = regions_[static_cast<size_t>(r)];
    if (info.total_bytes == 0) continue;
    if (!step_local(static_cast<Region>(r)))
      throw std::logic_error("MemoryPlan: a span over " + std::string(region_name(first)) + ".." +
                             std::string(region_name(last)) +
                             " mixes the pool with regions outside it");
    if (out.bytes > 0 && (info.base_offset != out.end() || info.total_bytes != info.slot_bytes))
      throw std::logic_error("MemoryPlan: a span over " +
                             std::string(region_name(static_cast<Region>(r))) +
                             ", whose tensors a packed plan places by lifetime, apart from the "
                             "regions before it");
    if (out.bytes == 0) {
      if (info.total_bytes != info.slot_bytes)
        throw std::logic_error("MemoryPlan: the tensors of " +
                               std::string(region_name(static_cast<Region>(r))) +
                               " lie apart in the pool");
      out.offset = info.base_offset;
    }
    out.bytes = info.base_offset + info.total_bytes - out.offset;
  }
  return out;
}

void unify_variants(std::vector<MemoryPlan>& plans, bool step_local_too) {
  if (plans.empty()) return;
  const auto& ref = plans.front().dtensors();
  for (const MemoryPlan& p : plans) {
    const auto& ts = p.dtensors();
    if (ts.size() != ref.size())
      throw std::logic_error("finalize_variants: variant '" + p.variant_name() + "' has " +
                             std::to_string(ts.size()) + " tensors, '" +
                             plans.front().variant_name() + "' has " + std::to_string(ref.size()));
    for (size_t i = 0; i < ts.size(); ++i)
      if (ts[i].region != ref[i].region || ts[i].dtype != ref[i].dtype || ts[i].name != ref[i].name)
        throw std::logic_error("finalize_variants: tensor " + std::to_string(i) + " is '" +
                               ts[i].name + "' in '" + p.variant_name() + "' but '" + ref[i].name +
                               "' in '" + plans.front().variant_name() + "'");
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!step_local_too && plans.front().step_local(ref[i].region)) continue;
    uint64_t slot = 0;
    for (const MemoryPlan& p : plans) slot = std::max(slot, p.dtensors()[i].slot_bytes);
    for (MemoryPlan& p : plans) p.raise_slot(static_cast<DTensorId>(i), slot);
  }
}

void finalize_variants(std::vector<MemoryPlan>& plans) {
  unify_variants(plans, true);
  for (MemoryPlan& p : plans) p.finalize();
}

}  // namespace tr

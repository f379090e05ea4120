// SPDX-License-Identifier: GPL-3.0-or-later
// Test helper: hand-made tensors and KernelArgs for calling one kernel
// directly.
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "resolved_params.h"
#include "runtime/kernel_args.h"

namespace tr::test {

// Owns a few FP32/INT32/INT8 tensors and builds KernelArgs that point at them.
class KernelHarness {
 public:
  // Adds a tensor (zero-filled) and returns its index.
  size_t tensor(const Shape& shape, DType dtype = DType::FP32) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(descs_.size());
    d->shape = shape;
    d->dtype = dtype;
    d->region = dtype == DType::INT8 ? Region::S_MASK : Region::T_SCRATCH;
    d->slot_bytes = DTensor::slot_bytes_for(shape, dtype, d->region);
    storage_.emplace_back(d->slot_bytes / 4 + 1, 0.0f);
    descs_.push_back(std::move(d));
    return descs_.size() - 1;
  }
  float* f32(size_t i) { return storage_[i].data(); }
  int32_t* i32(size_t i) { return reinterpret_cast<int32_t*>(storage_[i].data()); }
  int8_t* i8(size_t i) { return reinterpret_cast<int8_t*>(storage_[i].data()); }
  int64_t elements(size_t i) const { return descs_[i]->shape.elements(); }
  void fill_random(size_t i, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> u(lo, hi);
    for (int64_t k = 0; k < elements(i); ++k) f32(i)[k] = u(rng);
  }

  // KernelArgs with `ins` and `outs` (tensor indices) for `node`, `layer`.
  KernelArgs args(const std::vector<size_t>& ins, const std::vector<size_t>& outs,
                  const GraphNode* node = nullptr, const LayerNode* layer = nullptr) {
    KernelArgs a;
    a.node = node;
    a.layer_params = resolved(layer);
    for (size_t i : ins) a.in.push_back({storage_[i].data(), descs_[i].get()});
    for (size_t i : outs) a.out.push_back({storage_[i].data(), descs_[i].get()});
    a.scalars = scalars_.data();
    return a;
  }
  float* scalars() { return scalars_.data(); }

 private:
  std::vector<std::unique_ptr<DTensor>> descs_;
  std::vector<std::vector<float>> storage_;
  std::vector<float> scalars_ = std::vector<float>(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
};

// A model node of `type` with `params`, for kernels that read their layer.
inline LayerNode layer_with(LayerType type, LayerParams params = {}) {
  LayerNode l;
  l.id = "layer";
  l.type = type;
  l.params = params;
  return l;
}

}  // namespace tr::test

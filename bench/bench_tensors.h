// SPDX-License-Identifier: GPL-3.0-or-later
// Kernel benchmarks' tensors: random FP32 (or bfloat16) data with its
// DTensor descriptor, handed to kernels as KernelArgs.
#pragma once

#include <memory>
#include <random>
#include <vector>

#include <renaissance/project.h>
#include "compile/node_params.h"
#include "core/bf16_convert.h"
#include "runtime/kernel_args.h"

namespace tr::bench {

class Tensors {
 public:
  // FP32 or BF16 (rounded from the same draws, packed at the front).
  size_t add(const Shape& s, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f,
             DType dtype = DType::FP32) {
    auto d = std::make_unique<DTensor>();
    d->shape = s;
    d->dtype = dtype;
    std::vector<float> v(static_cast<size_t>(s.elements()));
    std::uniform_real_distribution<float> u(lo, hi);
    for (float& f : v) f = u(rng);
    if (dtype == DType::BF16) {
      auto* bits = reinterpret_cast<uint16_t*>(v.data());
      for (size_t i = 0; i < v.size(); ++i) bits[i] = float_to_bf16_bits(v[i]);
    }
    descs_.push_back(std::move(d));
    data_.push_back(std::move(v));
    return descs_.size() - 1;
  }
  KernelArgs args(const std::vector<size_t>& ins, const std::vector<size_t>& outs,
                  const LayerNode& layer, const GraphNode& node, int part = -1) {
    KernelArgs a;
    layer_params_.push_back(std::make_unique<NodeParams>(layer_node_params(layer)));
    a.layer_params = layer_params_.back().get();
    a.node = &node;
    a.part = part;
    for (size_t i : ins) a.in.push_back({data_[i].data(), descs_[i].get()});
    for (size_t i : outs) a.out.push_back({data_[i].data(), descs_[i].get()});
    return a;
  }

 private:
  std::vector<std::unique_ptr<DTensor>> descs_;
  std::vector<std::unique_ptr<NodeParams>> layer_params_;
  std::vector<std::vector<float>> data_;
};

}  // namespace tr::bench

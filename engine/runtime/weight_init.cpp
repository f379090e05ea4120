// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/weight_init.h"

#include <cmath>
#include <cstring>

#include "core/counter_rng.h"
#include "plan/tensor_shards.h"

namespace tr {

namespace {

// Uniform in [-bound, bound) for element `i` of model node `node`'s tensor `which`.
std::vector<float> uniform(uint64_t seed, int node, uint32_t which, int64_t count, double bound) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; i += 4) {
    const uint64_t a = (static_cast<uint64_t>(node) << 40) | static_cast<uint64_t>(i / 4);
    const auto r = counter_random(seed, RngStream::WeightInit, a, which);
    for (int64_t k = 0; k < 4 && i + k < count; ++k) {
      const double u = static_cast<double>(r[static_cast<size_t>(k)]) / 4294967296.0;
      v[static_cast<size_t>(i + k)] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  }
  return v;
}

void add(std::vector<InitialTensor>& out, DTensorId id, std::vector<float> values) {
  if (id != kNoTensor) out.push_back({id, std::move(values)});
}

}  // namespace

std::vector<InitialTensor> initial_weights(const CompiledProject& cp, uint64_t seed) {
  std::vector<InitialTensor> out;
  const MemoryPlan& plan = cp.plans.front();
  for (int v : cp.analysis.order) {
    const LayerTensors& t = cp.layers[static_cast<size_t>(v)];
    const DTensorId w = t.weight_in(ParamSeries::W);
    if (w == kNoTensor) continue;
    std::vector<float> weight, bias;
    // Tensor parallel: the whole tensor (every rank loads its part), drawn
    // as one rank would, so any split trains from the same weights.
    const int T = cp.tensor_ranks;
    const Shape ws = whole_shape(plan.get_dtensor(w), T);
    const int64_t wn = ws.elements();
    // A normalisation layer's scale starts at 1 and its shift at 0.
    if (plan.get_dtensor(w).region == param_region(ParamSeries::W, ParamKind::BN_WEIGHT)) {
      weight.assign(static_cast<size_t>(wn), 1.0f);
      bias.assign(static_cast<size_t>(wn), 0.0f);
      add(out, t.prev_mean, std::vector<float>(static_cast<size_t>(wn), 0.0f));
      add(out, t.prev_var, std::vector<float>(static_cast<size_t>(wn), 1.0f));
    } else {
      // fan_in: every weight feeding one output (kh*kw*Cin or K)
      const int64_t fan_in = ws.per_sample();
      const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
      weight = uniform(seed, v, 0, wn, bound);
      if (t.bias_in(ParamSeries::W) != kNoTensor)
        bias =
            uniform(seed, v, 1,
                    whole_shape(plan.get_dtensor(t.bias_in(ParamSeries::W)), T).elements(), bound);
    }
    add(out, t.weight_in(ParamSeries::E), weight);
    add(out, w, std::move(weight));
    if (!bias.empty()) {
      add(out, t.bias_in(ParamSeries::E), bias);
      add(out, t.bias_in(ParamSeries::W), std::move(bias));
    }
  }
  return out;
}

void write_initial_weights(const std::vector<InitialTensor>& tensors, const MemoryPlan& plan,
                           uint8_t* arena) {
  for (const InitialTensor& t : tensors)
    std::memcpy(arena + plan.get_dtensor(t.id).offset, t.values.data(), t.values.size() * 4);
}

}  // namespace tr

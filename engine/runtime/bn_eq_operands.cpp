// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/bn_eq_operands.h"

namespace tr {

namespace {

const DTensor* find_owned(const SpanArg& s, Region region, int owner) {
  for (const DTensor* t : s.tensors)
    if (t->region == region && t->owner == owner) return t;
  return nullptr;
}

}  // namespace

std::vector<BnEqLayer> bn_eq_layers(const KernelArgs& a) {
  const SpanArg& stats = a.in_spans[0];
  const SpanArg& weights = a.in_spans[1];
  const SpanArg& out = a.out_spans[0];
  std::vector<BnEqLayer> layers;
  for (const DTensor* scale_t : out.tensors) {
    if (scale_t->region != Region::B_EQ_SCALE) continue;
    const int owner = scale_t->owner;
    const DTensor* bias_t = find_owned(out, Region::B_EQ_BIAS, owner);
    const DTensor* mean_t = find_owned(stats, Region::B_PREV_MEAN, owner);
    const DTensor* var_t = find_owned(stats, Region::B_PREV_VAR, owner);
    const DTensor* beta_t = find_owned(weights, Region::W_BN_BIAS, owner);
    const DTensor* gamma_t = find_owned(weights, Region::W_BN_WEIGHT, owner);
    if (!bias_t || !mean_t || !var_t || !beta_t || !gamma_t) continue;
    BnEqLayer l;
    l.mean = stats.f32_at(*mean_t);
    l.var = stats.f32_at(*var_t);
    l.gamma = weights.f32_at(*gamma_t);
    l.beta = weights.f32_at(*beta_t);
    l.scale = out.f32_at(*scale_t);
    l.bias = out.f32_at(*bias_t);
    l.channels = scale_t->shape.elements();
    l.eps = a.params().eps_of(owner);
    layers.push_back(l);
  }
  return layers;
}

}  // namespace tr

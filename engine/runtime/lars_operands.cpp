// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/lars_operands.h"

#include <algorithm>
#include <string_view>

namespace tr {

namespace {

bool is_bias(const DTensor& t) {
  constexpr std::string_view suffix = ".bias";
  return t.name.size() >= suffix.size() &&
         std::string_view(t.name).substr(t.name.size() - suffix.size()) == suffix;
}

// The norm pair kept for `owner`'s weight, or null.
float* norms_of(const SpanArg& norms, int owner) {
  for (const DTensor* t : norms.tensors)
    if (t->owner == owner) return norms.f32_at(*t);
  return nullptr;
}

}  // namespace

std::vector<LarsOperand> lars_operands(const SpanArg& ws, const SpanArg& gs, const SpanArg* ms,
                                       const SpanArg& ns) {
  std::vector<LarsOperand> out;
  out.reserve(ws.tensors.size());
  // A sharded update's span is a rank's share of its tensors (ZeRO-1): each
  // tensor is cut to it, and one outside it is left out.
  const uint64_t lo = ws.offset, hi = ws.offset + ws.bytes;
  for (const DTensor* t : ws.tensors) {
    const uint64_t begin = std::max(lo, t->offset);
    const uint64_t end = std::min(hi, t->offset + static_cast<uint64_t>(t->shape.elements()) * 4);
    if (end <= begin) continue;
    LarsOperand o;
    o.w = reinterpret_cast<float*>(static_cast<uint8_t*>(ws.data) + (begin - lo));
    o.g = reinterpret_cast<float*>(static_cast<uint8_t*>(gs.data) + (begin - lo));
    o.m = ms ? reinterpret_cast<float*>(static_cast<uint8_t*>(ms->data) + (begin - lo)) : nullptr;
    o.norms = is_bias(*t) ? nullptr : norms_of(ns, t->owner);
    o.n = static_cast<int64_t>((end - begin) / 4);
    out.push_back(o);
  }
  return out;
}

}  // namespace tr

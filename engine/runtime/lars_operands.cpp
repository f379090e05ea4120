// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/lars_operands.h"

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

// A tensor's place in another span of the same layout (W, G, M share it).
float* same_place(const SpanArg& reference, const SpanArg& other, const DTensor& t) {
  return reinterpret_cast<float*>(static_cast<uint8_t*>(other.data) +
                                  (t.offset - reference.offset));
}

}  // namespace

std::vector<LarsOperand> lars_operands(const SpanArg& ws, const SpanArg& gs, const SpanArg* ms,
                                       const SpanArg& ns) {
  std::vector<LarsOperand> out;
  out.reserve(ws.tensors.size());
  for (const DTensor* t : ws.tensors) {
    LarsOperand o;
    o.w = ws.f32_at(*t);
    o.g = same_place(ws, gs, *t);
    o.m = ms ? same_place(ws, *ms, *t) : nullptr;
    o.norms = is_bias(*t) ? nullptr : norms_of(ns, t->owner);
    o.n = t->shape.elements();
    out.push_back(o);
  }
  return out;
}

}  // namespace tr

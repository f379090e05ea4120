// SPDX-License-Identifier: GPL-3.0-or-later
#include "variant_agreement.h"

namespace tr::gui {

bool agrees_in_all_variants(const CompiledPlan& cp, DTensorId id) {
  if (cp.plans().empty() || id < 0) return false;
  const auto& first = cp.plans().front().dtensors();
  if (static_cast<size_t>(id) >= first.size()) return false;
  const DTensor& t = first[static_cast<size_t>(id)];
  for (const MemoryPlan& plan : cp.plans()) {
    if (static_cast<size_t>(id) >= plan.dtensors().size()) return false;
    const DTensor& u = plan.dtensors()[static_cast<size_t>(id)];
    if (u.offset != t.offset || u.slot_bytes != t.slot_bytes || u.region != t.region) return false;
  }
  return true;
}

bool placed_per_variant(const CompiledPlan& cp, DTensorId id) {
  if (cp.plans().empty() || !cp.plans().front().packed() || id < 0) return false;
  const auto& first = cp.plans().front().dtensors();
  return static_cast<size_t>(id) < first.size() &&
         cp.plans().front().step_local(first[static_cast<size_t>(id)].region);
}

VariantAgreement check_variant_agreement(const CompiledPlan& cp) {
  VariantAgreement a;
  if (cp.plans().empty()) return a;
  for (const DTensor& t : cp.plans().front().dtensors()) {
    if (placed_per_variant(cp, t.id)) {
      ++a.per_variant;
      continue;
    }
    ++a.tensors;
    if (!agrees_in_all_variants(cp, t.id)) a.differing.push_back(t.id);
  }
  return a;
}

}  // namespace tr::gui

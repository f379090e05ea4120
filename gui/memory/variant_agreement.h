// SPDX-License-Identifier: GPL-3.0-or-later
// Checks the compiler's promise that one DTensor id has one offset (and one
// slot) in every shape variant, so the memory view can show that it holds.
// A packed plan keeps the promise for every tensor outside the step-local
// pool; the pool's tensors are placed per variant, by lifetime.
#pragma once

#include <vector>

#include <renaissance/compiled_plan.h>

namespace tr::gui {

struct VariantAgreement {
  int tensors = 0;                   // in the first variant's plan, outside the pool
  int per_variant = 0;               // the pool's tensors (packed plans)
  std::vector<DTensorId> differing;  // ids whose offset or slot differs somewhere
  bool holds() const { return differing.empty(); }
};

VariantAgreement check_variant_agreement(const CompiledPlan& cp);

// True when tensor `id` has the same offset and slot in every variant.
bool agrees_in_all_variants(const CompiledPlan& cp, DTensorId id);
// True when the plan is packed and `id` lives in its step-local pool.
bool placed_per_variant(const CompiledPlan& cp, DTensorId id);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Checks the compiler's promise that one DTensor id has one offset (and one
// slot) in every shape variant, so the memory view can show that it holds.
#pragma once

#include <vector>

#include "compile/compiler.h"

namespace tr::gui {

struct VariantAgreement {
  int tensors = 0;                   // in the first variant's plan
  std::vector<DTensorId> differing;  // ids whose offset or slot differs somewhere
  bool holds() const { return differing.empty(); }
};

VariantAgreement check_variant_agreement(const CompiledProject& cp);

// True when tensor `id` has the same offset and slot in every variant.
bool agrees_in_all_variants(const CompiledProject& cp, DTensorId id);

}  // namespace tr::gui

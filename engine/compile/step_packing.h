// SPDX-License-Identifier: GPL-3.0-or-later
// Phase 4 of a packed compile: each variant's step-local tensors (F, T, S) go
// into the pool by their lifetimes over the variant's step. An elementwise
// op whose input dies where its output is born writes the output over the
// input (in place): the two share one block from the input's first use to
// the output's last. Everything is decided here, at compile time.
#pragma once

#include "compile/compiler.h"

namespace tr {

// Places every variant's pool and finalizes the plans; fills cp.pools.
// Throws std::logic_error on a graph captured for all variants that touches
// a step-local tensor, or a packing that gives live tensors the same bytes.
void pack_step_local(CompiledProject& cp);

}  // namespace tr

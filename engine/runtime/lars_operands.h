// SPDX-License-Identifier: GPL-3.0-or-later
// The operands of LARS_NORMS and LARS_UPDATE per weight tensor, found in the
// ops' spans: the weight, its gradient and momentum at the same place in
// their series, and the norm pair kept for its layer. Biases, and weights
// without a norm pair, get none (their trust ratio is 1). Every backend's
// LARS kernels read their tensors from here.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/kernel_args.h"

namespace tr {

struct LarsOperand {
  float* w = nullptr;
  float* g = nullptr;
  float* m = nullptr;      // null when no moments span was given
  float* norms = nullptr;  // [|w|, |g|]; null: trust ratio 1
  int64_t n = 0;
};

// `ws`, `gs` and `ms` (may be null) share one layout; `ns` holds the norm pairs.
std::vector<LarsOperand> lars_operands(const SpanArg& ws, const SpanArg& gs, const SpanArg* ms,
                                       const SpanArg& ns);

}  // namespace tr

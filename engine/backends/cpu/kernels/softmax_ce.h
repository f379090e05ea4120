// SPDX-License-Identifier: GPL-3.0-or-later
// Softmax cross-entropy on the CPU: loss, top-1/top-5 counts, the logits' gradient.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [logits [N,1,1,K], labels int32 [N,1,1,1]]
// out [result [1,1,1,4] = (loss sum, top-1 count, top-5 count, N), dlogits]
void softmax_ce_fwd_bwd(const KernelArgs& a);
// in [logits, labels] out [result, optional confusion [1,1,K,K] (row: label,
// column: argmax), added to when the node accumulates output 1]
void softmax_ce_fwd(const KernelArgs& a);

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Scaled dot-product attention on the CPU over the positions of an NHWC
// feature map (T = H x W tokens of each sample), FlashAttention's way: a
// query's scores are met a block of keys at a time with a running maximum
// and sum, so no T x T matrix exists; the backward recomputes each
// probability from the queries, the keys and the saved log-sum-exp. Head h
// of C channels is channels [h*C/heads, (h+1)*C/heads) of the queries, the
// keys and the values alike; the scores are scaled by 1/sqrt(C/heads).
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [qkv [N,H,W,3C]: queries, keys, values] out [o [N,H,W,C], lse [N,H,W,heads]]
void attention_fwd(const KernelArgs& a);
// in [qkv, o, lse, do] out [dqkv]
void attention_bwd(const KernelArgs& a);

}  // namespace tr::cpu

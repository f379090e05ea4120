// SPDX-License-Identifier: GPL-3.0-or-later
// The token ops of a vision transformer on the CPU, over NHWC token maps
// (each position's C channels a token): a learned position embedding added
// to every sample, a learned class token put before the positions, and the
// first token taken as the sample's features. The parameters' gradients sum
// over the batch, each value by one thread in sample order.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x, e] out [y]; in [dy] out [de, dx]
void pos_embed_fwd(const KernelArgs& a);
void pos_embed_bwd(const KernelArgs& a);
// in [x, token] out [y]; in [dy] out [dtoken, dx]
void class_token_fwd(const KernelArgs& a);
void class_token_bwd(const KernelArgs& a);
// in [x] out [y]; in [dy] out [dx]
void token_pool_fwd(const KernelArgs& a);
void token_pool_bwd(const KernelArgs& a);

}  // namespace tr::cpu

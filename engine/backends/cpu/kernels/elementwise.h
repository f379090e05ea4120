// SPDX-License-Identifier: GPL-3.0-or-later
// Residual add, flatten, identity and label copies on the CPU.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [a, b] out [y]
void add_fwd(const KernelArgs& a);
// in [dy] out [da, db]; da and db may be the same tensor (both ports read one source)
void add_bwd(const KernelArgs& a);
// in [x0, x1, ...] out [y]: y's channels are x0's, then x1's, and so on.
void concat_fwd(const KernelArgs& a);
// in [dy] out [dx0, dx1, ...]: each its slice of dy's channels (one may be absent).
void concat_bwd(const KernelArgs& a);
// in [x] out [y]: NHWC order is kept, only the shape changes
void flatten_fwd(const KernelArgs& a);
// in [dy] out [dx]
void flatten_bwd(const KernelArgs& a);
// in [x] out [y]: dropout at inference
void identity(const KernelArgs& a);
// in [labels int32] out [active labels int32]
void copy_labels(const KernelArgs& a);

}  // namespace tr::cpu

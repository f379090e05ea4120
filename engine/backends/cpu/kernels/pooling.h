// SPDX-License-Identifier: GPL-3.0-or-later
// Max, average and global average pooling on the CPU.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x] out [y]
void maxpool_fwd(const KernelArgs& a);
// in [x, y, dy] out [dx]
void maxpool_bwd(const KernelArgs& a);
// in [x] out [y, where]: MAXPOOL_FWD's y, and each window's first maximum's
// position in the kernel (INT8, -1 for a NaN maximum)
void maxpool_fwd_where(const KernelArgs& a);
// in [where, dy] out [dx]: MAXPOOL_BWD's result from the positions alone
void maxpool_bwd_where(const KernelArgs& a);
// in [x] out [y]
void avgpool_fwd(const KernelArgs& a);
// in [dy] out [dx] (dx's shape is x's)
void avgpool_bwd(const KernelArgs& a);
// in [x] out [y [N,1,1,C]]
void gap_fwd(const KernelArgs& a);
// in [dy [N,1,1,C]] out [dx]
void gap_bwd(const KernelArgs& a);

}  // namespace tr::cpu

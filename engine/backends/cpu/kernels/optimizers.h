// SPDX-License-Identifier: GPL-3.0-or-later
// CPU optimizer kernels: SGD/Adam/LARS span updates, loss scale, Adam bias correction.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in_spans [W, G, (M)] out_spans [W, (M)]; M present iff momentum is used
void sgd_update(const KernelArgs& a);
// in_spans [W, G, M, V] out_spans [W, M, V]
void adam_update(const KernelArgs& a);
// in_spans [W, G] out_spans [N]: per non-bias weight tensor, (||w||, ||g||)
void lars_norms(const KernelArgs& a);
// in_spans [W, G, M, N] out_spans [W, M]
void lars_update(const KernelArgs& a);
// scalars: halve LOSS_SCALE on overflow (not below 1), double it after 2000
// clean steps; INV_LOSS_SCALE follows
void loss_scale_update(const KernelArgs& a);
// scalars: ADAM_CORR1 = 1 - beta1^UPDATES, ADAM_CORR2 = 1 - beta2^UPDATES
void adam_bias_correction(const KernelArgs& a);
// scalars: UPDATES += 1 unless OVERFLOW is set
void count_update(const KernelArgs& a);

}  // namespace tr::cpu

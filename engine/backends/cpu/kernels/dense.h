// SPDX-License-Identifier: GPL-3.0-or-later
// Convolution and linear layers on the CPU (NHWC activations, OHWI / [out,1,1,in]
// weights): forward, the forked backward (dW, dB, dX selected by KernelArgs::part)
// and the first layer's weight-only backward.
#pragma once

#include "runtime/kernel_args.h"

namespace tr::cpu {

// in [x, w, (b)] out [y]
void conv_fwd(const KernelArgs& a);
// The channel block of the feature layout oneDNN's FP32 direct convolutions
// take on this CPU (asked once, for a 32-channel 3x3 map): 8 on AVX2, 16 on
// AVX-512, 0 when they take NHWC as well as any blocked layout.
int conv_channel_block();
// in [x, w, dy] out [dw, (db), dx]
void conv_bwd(const KernelArgs& a);
// in [x, dy] out [dw, (db)]
void conv_bwd_first(const KernelArgs& a);
// in [x, w, (b)] out [y]; x is read as [N, H*W*C] in NHWC order
void linear_fwd(const KernelArgs& a);
// in [x, w, dy] out [dw, (db), dx]
void linear_bwd(const KernelArgs& a);
// in [x, dy] out [dw, (db)]
void linear_bwd_first(const KernelArgs& a);

}  // namespace tr::cpu

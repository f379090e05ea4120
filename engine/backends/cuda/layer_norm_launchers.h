// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers of the CUDA layer-normalisation kernels (layer_norm_kernels.cu):
// each unpacks the resolved KernelArgs as the CPU twin in
// backends/cpu/kernels/layer_norm.cpp does, honouring the accumulate flags.
// x, y, dy and dx are FP32, FP16 or BF16 (features with padded channels);
// gamma, beta, their gradients and the saved statistics are FP32. Other
// mixes throw std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda::layer_norm {

// in [x, gamma, beta] out [y, saved]
void fwd(const KernelArgs& a, cudaStream_t stream);
// in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
void bwd(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes of LAYER_NORM_BWD (the parameter gradients'
// partials); 0 for any other launch.
uint64_t workspace_bytes(const KernelArgs& a);

}  // namespace tr::cuda::layer_norm

// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers of the CUDA batch-norm kernels (batch_norm_kernels.cu): each
// unpacks the resolved KernelArgs as the CPU twin in
// backends/cpu/kernels/batch_norm.cpp and range_ops.cpp does, honouring the
// accumulate flags, and launches on `stream`. x, y, dy, dx, gamma, beta and
// their gradients are FP32, or FP16 under AMP (features with padded
// channels); statistics, saved values and the inference scale and bias stay
// FP32. Other mixes throw std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda::bn {

// in [x, gamma, beta, prev_mean, prev_var] out [y, saved, next_mean, next_var]
void fwd_train(const KernelArgs& a, cudaStream_t stream);
void relu_fwd_train(const KernelArgs& a, cudaStream_t stream);
// in [x, eq_scale, eq_bias] out [y]
void fwd_infer(const KernelArgs& a, cudaStream_t stream);
void relu_fwd_infer(const KernelArgs& a, cudaStream_t stream);
// in [x, gamma, saved, dy] out [dgamma, dbeta, dx]
void bwd(const KernelArgs& a, cudaStream_t stream);
// in [x, gamma, beta, saved, dy] out [dgamma, dbeta, dx]
void relu_bwd(const KernelArgs& a, cudaStream_t stream);
// RangeOp::BN_EQ_PARAMS: in spans [running stats, BN weights], out [eq scale/bias]
void eq_params(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes of a batch-norm compute op (its per-slice partials
// and per-channel coefficients); 0 for any other launch.
uint64_t workspace_bytes(const KernelArgs& a);

}  // namespace tr::cuda::bn

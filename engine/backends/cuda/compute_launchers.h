// SPDX-License-Identifier: GPL-3.0-or-later
// Launchers of the CUDA compute kernels that are our own (activations, add,
// copies, dropout, pooling, softmax cross-entropy): each unpacks the
// resolved KernelArgs on the host and launches on `stream`, honouring the
// accumulate flags as the CPU twin in backends/cpu/kernels does. Features
// and gradients are FP32 (compact) or FP16 (AMP; channels padded as the
// plan lays them out), computed in FP32 and rounded once; an op whose
// operands mix the two, or take another dtype, throws std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda::compute {

void copy_labels(const KernelArgs& a, cudaStream_t stream);
void identity(const KernelArgs& a, cudaStream_t stream);
void flatten(const KernelArgs& a, cudaStream_t stream);  // forward and backward alike
void relu_fwd(const KernelArgs& a, cudaStream_t stream);
void relu_bwd(const KernelArgs& a, cudaStream_t stream);
void activation_fwd(const KernelArgs& a, cudaStream_t stream);  // NodeParams::activation
void activation_bwd(const KernelArgs& a, cudaStream_t stream);
void add_fwd(const KernelArgs& a, cudaStream_t stream);
void add_bwd(const KernelArgs& a, cudaStream_t stream);
void add_relu_fwd(const KernelArgs& a, cudaStream_t stream);
void add_relu_bwd(const KernelArgs& a, cudaStream_t stream);
void concat_fwd(const KernelArgs& a, cudaStream_t stream);
void concat_bwd(const KernelArgs& a, cudaStream_t stream);
void dropout_fwd(const KernelArgs& a, cudaStream_t stream);
void dropout_bwd(const KernelArgs& a, cudaStream_t stream);
void maxpool_fwd(const KernelArgs& a, cudaStream_t stream);
void maxpool_bwd(const KernelArgs& a, cudaStream_t stream);
void maxpool_fwd_where(const KernelArgs& a, cudaStream_t stream);
void maxpool_bwd_where(const KernelArgs& a, cudaStream_t stream);
void avgpool_fwd(const KernelArgs& a, cudaStream_t stream);
void avgpool_bwd(const KernelArgs& a, cudaStream_t stream);
void gap_fwd(const KernelArgs& a, cudaStream_t stream);
void gap_bwd(const KernelArgs& a, cudaStream_t stream);
void softmax_ce_fwd_bwd(const KernelArgs& a, cudaStream_t stream);
void softmax_ce_fwd(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes these kernels need (softmax's per-row tallies) and
// the batch-norm kernels' (bn_launchers.h).
uint64_t workspace_bytes(const KernelArgs& a);

}  // namespace tr::cuda::compute

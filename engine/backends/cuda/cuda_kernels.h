// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend's op -> kernel table. A launcher reads the resolved
// KernelArgs on the host (device pointers, span sizes, optimizer constants)
// and launches on the given stream; values that earlier kernels compute
// (S_SCALARS) are read on the device, so launches can be captured.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "compile/computation_graph.h"
#include "compile/ops.h"
#include "runtime/kernel_args.h"

namespace tr::cuda {

using CudaKernel = void (*)(const KernelArgs&, cudaStream_t);

// nullptr for ops without a CUDA kernel yet, and for ops that are not
// kernels (H2D_INPUT is a copy, collectives go through NCCL).
CudaKernel cuda_compute_kernel(ComputeOp op) noexcept;
CudaKernel cuda_range_kernel(RangeOp op) noexcept;
// The kernel of a COMPUTE or RANGE node.
CudaKernel cuda_kernel(const GraphNode& node) noexcept;
// The name of the node's op, for messages.
std::string_view cuda_op_name(const GraphNode& node) noexcept;

// Stream workspace bytes the kernel for `a` needs when it runs on `stream`:
// softmax cross-entropy's per-row tallies, cuBLAS's workspace for the linear
// layers, the chosen cuDNN algorithm's for convolutions (chosen here, on
// first sight of the geometry, through the stream's cuDNN handle).
uint64_t cuda_workspace_bytes(const KernelArgs& a, cudaStream_t stream = nullptr);

}  // namespace tr::cuda

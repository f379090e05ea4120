// SPDX-License-Identifier: GPL-3.0-or-later
// Convolutions on CUDA through cuDNN (the stream's handle, see
// stream_handles.h): NHWC activations, OHWI weights (cuDNN's NHWC filter
// layout), tensor-op math (TF32 for FP32 unless set_fp32_gemm(STRICT); FP16
// with FP32 accumulation for AMP). Same operands, forked parts and
// accumulate semantics as the CPU twin in backends/cpu/kernels/dense.h.
//
// Algorithms are chosen once per geometry, measured by cuDNN on the launch's
// own inputs when the backend prepares the launch before capturing it
// (workspace_bytes), and kept for the process; a launch only looks its
// choice up.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda::conv {

// How a geometry's algorithm is chosen among cuDNN's measured candidates:
// the fastest (PyTorch's cudnn.benchmark), or the fastest deterministic one
// (a seed's run repeats bit for bit). Process-wide, set by the backend from
// CudaBackendOptions::deterministic; part of every plan's key.
enum class ConvAlgorithms { FASTEST, DETERMINISTIC };
void set_conv_algorithms(ConvAlgorithms choice) noexcept;
ConvAlgorithms conv_algorithms() noexcept;

// in [x, w, (b)] out [y]
void fwd(const KernelArgs& a, cudaStream_t stream);
// in [x, w, dy] out [dw, (db), dx]; KernelArgs::part picks DW, DB or DX
void bwd(const KernelArgs& a, cudaStream_t stream);
// in [x, dy] out [dw, (db)]
void bwd_first(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes the chosen algorithm of a convolution op (or of its
// forked part) needs, choosing it on first sight of the geometry (through
// the cuDNN handle of `stream`, host-side only); 0 for other ops, for the DB
// part, and for malformed operands (the launch reports those).
uint64_t workspace_bytes(const KernelArgs& a, cudaStream_t stream);

}  // namespace tr::cuda::conv

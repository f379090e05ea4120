// SPDX-License-Identifier: GPL-3.0-or-later
// Linear layers on CUDA: the GEMMs through cuBLAS (the stream's handle, see
// stream_handles.h), bias broadcast and bias gradient through
// linear_kernels.cu. Same operands, forked parts and accumulate semantics as
// the CPU twin in backends/cpu/kernels/dense.h. All operands FP32, or all
// FP16 (AMP: FP16 GEMM inputs accumulated in FP32, results rounded once;
// features with padded channels); a mix throws std::invalid_argument.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/kernel_args.h"

namespace tr::cuda {

// How FP32 GEMMs compute. TF32 tensor cores by default (the project's
// choice for FP32 training); STRICT keeps FP32 products and sums, for
// comparisons with the CPU twin. Read at launch (or capture) time.
enum class Fp32Gemm { TF32, STRICT };
void set_fp32_gemm(Fp32Gemm mode) noexcept;
Fp32Gemm fp32_gemm() noexcept;

namespace linear {

// in [x, w, (b)] out [y]
void fwd(const KernelArgs& a, cudaStream_t stream);
// in [x, w, dy] out [dw, (db), dx]; KernelArgs::part picks DW, DB or DX
void bwd(const KernelArgs& a, cudaStream_t stream);
// in [x, dy] out [dw, (db)]
void bwd_first(const KernelArgs& a, cudaStream_t stream);

// Stream workspace bytes when `a` is a linear op that runs a GEMM (not the
// DB part alone), else 0: cuBLAS's, after room for compact FP16 copies of an
// x (and an FP32 dx) whose padded rows are not evenly spaced.
uint64_t workspace_bytes(const KernelArgs& a);

}  // namespace linear

}  // namespace tr::cuda

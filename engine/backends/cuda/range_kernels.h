// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA RANGE kernels other than optimizer updates, on raw device pointers so
// that nvcc never sees the engine's headers (cuda_kernels.cpp unpacks the
// KernelArgs). Each launches on `stream` without synchronising and returns
// the launch's error. Semantics are those of backends/cpu/kernels/range_ops.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tr::cuda {

// dst <- src for `bytes` bytes that overlap (memmove); one block, in order.
cudaError_t launch_overlapping_move(void* dst, const void* src, uint64_t bytes,
                                    cudaStream_t stream);
// out[i] += in[i]
cudaError_t launch_accumulate(float* out, const float* in, uint64_t n, cudaStream_t stream);
// out[i] = in[i] * *factor unless *overflow != 0 (out may equal in)
cudaError_t launch_scale(float* out, const float* in, uint64_t n, const float* factor,
                         const float* overflow, cudaStream_t stream);
// x[i] = sqrt(x[i]), correctly rounded as the CPU twin's std::sqrt
cudaError_t launch_sqrt(float* x, uint64_t n, cudaStream_t stream);
// *overflow = 1 when any in[i] is inf or NaN; never clears it
cudaError_t launch_nan_check(const float* in, uint64_t n, float* overflow, cudaStream_t stream);
// Round to nearest even; NaN keeps its sign and top payload bits, quiet bit set.
cudaError_t launch_cast_fp32_to_fp16(const float* in, uint16_t* out, uint64_t n,
                                     cudaStream_t stream);
// Exact; NaN payloads are kept.
cudaError_t launch_cast_fp16_to_fp32(const uint16_t* in, float* out, uint64_t n,
                                     cudaStream_t stream);
// bfloat16 as the CPU twin narrows (half_io.cuh's bf16_bits_of)
cudaError_t launch_cast_fp32_to_bf16(const float* in, uint16_t* out, uint64_t n,
                                     cudaStream_t stream);
// Exact
cudaError_t launch_cast_bf16_to_fp32(const uint16_t* in, float* out, uint64_t n,
                                     cudaStream_t stream);
// e[i] = decay * e[i] + keep_new * w[i] unless overflow (nullable) is set
cudaError_t launch_ema(float* e, const float* w, uint64_t n, float decay, float keep_new,
                       const float* overflow, cudaStream_t stream);

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA RANGE kernels: overlapping copies, accumulate, AMP scaling, NaN check,
// FP16 and BF16 casts, EMA. Whole spans at once; padding between tensors is
// zero, so running over it is harmless, as on the CPU.
#include <cuda_fp16.h>

#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/range_kernels.h"

namespace tr::cuda {

namespace {

// out = op(out, in) elementwise; float4 over the first n4 * 4 floats when the
// host found every pointer aligned, scalars for the rest. The flag and the
// factor live in S_SCALARS, written by earlier kernels, so they are read here,
// once per thread: the whole grid agrees, so a skipped update skips entirely.
template <class Op>
__global__ void map_kernel(float* out, const float* in, uint64_t n, uint64_t n4,
                           const float* skip_flag, const float* factor, Op op) {
  if (skip_flag && *skip_flag != 0.0f) return;
  if (factor) op.factor = *factor;
  const uint64_t stride = grid_stride();
  for (uint64_t i = first_index(); i < n4; i += stride) {
    float4 o = reinterpret_cast<float4*>(out)[i];
    const float4 x = reinterpret_cast<const float4*>(in)[i];
    o.x = op(o.x, x.x);
    o.y = op(o.y, x.y);
    o.z = op(o.z, x.z);
    o.w = op(o.w, x.w);
    reinterpret_cast<float4*>(out)[i] = o;
  }
  for (uint64_t i = n4 * 4 + first_index(); i < n; i += stride) out[i] = op(out[i], in[i]);
}

// Each op has a `factor` member that map_kernel fills when given one.
struct Add {
  float factor = 0.0f;
  __device__ float operator()(float o, float x) const { return o + x; }
};

struct Scale {
  float factor = 1.0f;
  __device__ float operator()(float, float x) const { return x * factor; }
};

struct Sqrt {
  float factor = 0.0f;
  __device__ float operator()(float, float x) const { return sqrtf(x); }
};

struct Ema {
  float decay, keep_new;
  float factor = 0.0f;
  __device__ float operator()(float e, float w) const { return decay * e + keep_new * w; }
};

template <class Op>
cudaError_t launch_map(float* out, const float* in, uint64_t n, const float* skip_flag,
                       const float* factor, Op op, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  const uint64_t n4 = aligned16(out) && aligned16(in) ? n / 4 : 0;
  map_kernel<<<blocks_for(n4 ? n4 : n), kThreads, 0, stream>>>(out, in, n, n4, skip_flag, factor,
                                                               op);
  return cudaGetLastError();
}

__device__ inline bool not_finite(uint32_t bits) {
  return (bits & 0x7F800000u) == 0x7F800000u;
}

__global__ void nan_check_kernel(const uint32_t* bits, uint64_t n, uint64_t n4, float* overflow) {
  bool bad = false;
  const uint64_t stride = grid_stride();
  for (uint64_t i = first_index(); i < n4; i += stride) {
    const uint4 v = reinterpret_cast<const uint4*>(bits)[i];
    bad |= not_finite(v.x) | not_finite(v.y) | not_finite(v.z) | not_finite(v.w);
  }
  for (uint64_t i = n4 * 4 + first_index(); i < n; i += stride) bad |= not_finite(bits[i]);
  // Every thread of the block reaches this, whatever its loop count; only a
  // block that saw a bad value writes (the same value, so races are benign).
  if (__syncthreads_or(bad) && threadIdx.x == 0) *overflow = 1.0f;
}

__device__ inline uint16_t half_bits_of(float x) {
  const uint32_t bits = __float_as_uint(x);
  const uint32_t mag = bits & 0x7FFFFFFFu;
  // The conversion instruction would return a canonical NaN; the CPU keeps the payload.
  if (mag > 0x7F800000u)
    return static_cast<uint16_t>(((bits >> 16) & 0x8000u) | 0x7E00u | ((mag >> 13) & 0x3FFu));
  return __half_as_ushort(__float2half_rn(x));
}

__device__ inline float float_of_half_bits(uint16_t h) {
  if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0)
    return __uint_as_float((static_cast<uint32_t>(h & 0x8000u) << 16) | 0x7F800000u |
                           (static_cast<uint32_t>(h & 0x3FFu) << 13));
  return __half2float(__ushort_as_half(h));
}

__global__ void narrow_kernel(const float* in, uint16_t* out, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = half_bits_of(in[i]);
}

__global__ void widen_kernel(const uint16_t* in, float* out, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = float_of_half_bits(in[i]);
}

__global__ void narrow_bf16_kernel(const float* in, uint16_t* out, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = bf16_bits_of(in[i]);
}

__global__ void widen_bf16_kernel(const uint16_t* in, float* out, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) out[i] = float_of_bf16_bits(in[i]);
}

// One block walks the bytes in the direction that never overwrites a byte
// before it is read: each chunk is loaded by every thread before any stores.
__global__ void move_kernel(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
  const uint64_t chunk = blockDim.x;
  const uint64_t chunks = (bytes + chunk - 1) / chunk;
  const bool forward = dst < src;
  for (uint64_t c = 0; c < chunks; ++c) {
    const uint64_t base = (forward ? c : chunks - 1 - c) * chunk;
    const uint64_t i = base + threadIdx.x;
    const uint8_t v = i < bytes ? src[i] : 0;
    __syncthreads();
    if (i < bytes) dst[i] = v;
    __syncthreads();
  }
}

}  // namespace

cudaError_t launch_overlapping_move(void* dst, const void* src, uint64_t bytes,
                                    cudaStream_t stream) {
  if (bytes == 0 || dst == src) return cudaGetLastError();
  move_kernel<<<1, 1024, 0, stream>>>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src),
                                      bytes);
  return cudaGetLastError();
}

cudaError_t launch_accumulate(float* out, const float* in, uint64_t n, cudaStream_t stream) {
  return launch_map(out, in, n, nullptr, nullptr, Add{}, stream);
}

cudaError_t launch_scale(float* out, const float* in, uint64_t n, const float* factor,
                         const float* overflow, cudaStream_t stream) {
  return launch_map(out, in, n, overflow, factor, Scale{}, stream);
}

cudaError_t launch_sqrt(float* x, uint64_t n, cudaStream_t stream) {
  return launch_map(x, x, n, nullptr, nullptr, Sqrt{}, stream);
}

cudaError_t launch_nan_check(const float* in, uint64_t n, float* overflow, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  const uint64_t n4 = aligned16(in) ? n / 4 : 0;
  nan_check_kernel<<<blocks_for(n4 ? n4 : n), kThreads, 0, stream>>>(
      reinterpret_cast<const uint32_t*>(in), n, n4, overflow);
  return cudaGetLastError();
}

cudaError_t launch_cast_fp32_to_fp16(const float* in, uint16_t* out, uint64_t n,
                                     cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  narrow_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_cast_fp16_to_fp32(const uint16_t* in, float* out, uint64_t n,
                                     cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  widen_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_cast_fp32_to_bf16(const float* in, uint16_t* out, uint64_t n,
                                     cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  narrow_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_cast_bf16_to_fp32(const uint16_t* in, float* out, uint64_t n,
                                     cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  widen_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_ema(float* e, const float* w, uint64_t n, float decay, float keep_new,
                       const float* overflow, cudaStream_t stream) {
  return launch_map(e, w, n, overflow, nullptr, Ema{decay, keep_new}, stream);
}

}  // namespace tr::cuda

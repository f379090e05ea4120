// SPDX-License-Identifier: GPL-3.0-or-later
// Device helpers shared by the kernels that take FP32, FP16 or BF16 storage:
// loads widen to float (exact), stores round to nearest even once, and a
// FeatureView's logical element index maps to its padded offset.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

__device__ inline float load(const float* p, uint64_t i) {
  return p[i];
}
__device__ inline float load(const __half* p, uint64_t i) {
  return __half2float(p[i]);
}
__device__ inline void store(float* p, uint64_t i, float v) {
  p[i] = v;
}
__device__ inline void store(__half* p, uint64_t i, float v) {
  p[i] = __float2half_rn(v);
}

// bfloat16 bits of x as the CPU twin narrows (core/bf16_convert.h, the rule
// of AVX-512 BF16): round to nearest even, a zero or subnormal becomes a zero
// of its sign, a NaN keeps its sign and top payload bits and is made quiet.
__device__ inline uint16_t bf16_bits_of(float x) {
  const uint32_t bits = __float_as_uint(x);
  if ((bits & 0x7F800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}
// Exact: bfloat16 is the top half of a binary32.
__device__ inline float float_of_bf16_bits(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}
__device__ inline float load(const __nv_bfloat16* p, uint64_t i) {
  return float_of_bf16_bits(__bfloat16_as_ushort(p[i]));
}
__device__ inline void store(__nv_bfloat16* p, uint64_t i, float v) {
  p[i] = __ushort_as_bfloat16(bf16_bits_of(v));
}

// v as storage of type T holds it: rounded once and widened again (the
// tag's value is unused).
__device__ inline float stored_as(const float*, float v) {
  return v;
}
__device__ inline float stored_as(const __half*, float v) {
  return __half2float(__float2half_rn(v));
}
__device__ inline float stored_as(const __nv_bfloat16*, float v) {
  return float_of_bf16_bits(bf16_bits_of(v));
}

// A FeatureView with its element type known: logical element j (row-major
// over rows of `cols`) lives at offset(j).
template <class T>
struct Rows {
  T* p;
  int64_t cols, stride;

  __host__ explicit Rows(const FeatureView& v)
      : p(static_cast<T*>(v.data)), cols(v.cols), stride(v.stride) {}
  __device__ uint64_t offset(uint64_t j) const {
    if (cols == stride) return j;  // compact: no division
    const uint64_t r = j / static_cast<uint64_t>(cols);
    return r * static_cast<uint64_t>(stride) + (j - r * static_cast<uint64_t>(cols));
  }
  __device__ float get(uint64_t j) const { return load(p, offset(j)); }
  // Positions (padding included) an output walk covers for n logical values.
  __device__ uint64_t positions(uint64_t n) const {
    return cols == stride ? n : n / static_cast<uint64_t>(cols) * static_cast<uint64_t>(stride);
  }
  // The logical index of position i, or false for a padding lane.
  __device__ bool logical(uint64_t i, uint64_t& j) const {
    if (cols == stride) {
      j = i;
      return true;
    }
    const uint64_t r = i / static_cast<uint64_t>(stride), k = i - r * static_cast<uint64_t>(stride);
    j = r * static_cast<uint64_t>(cols) + k;
    return k < static_cast<uint64_t>(cols);
  }
};

// Calls the launcher's kernel template with the storage type `e` names.
template <class Launch>
auto dispatch(Elem e, Launch&& launch) {
  if (e == Elem::F16) return launch(static_cast<__half*>(nullptr));
  if (e == Elem::BF16) return launch(static_cast<__nv_bfloat16*>(nullptr));
  return launch(static_cast<float*>(nullptr));
}

}  // namespace tr::cuda

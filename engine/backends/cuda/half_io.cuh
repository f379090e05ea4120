// SPDX-License-Identifier: GPL-3.0-or-later
// Device helpers shared by the kernels that take FP32 or FP16 storage: loads
// widen to float (exact), stores round to nearest even once, and a
// FeatureView's logical element index maps to its padded offset.
#pragma once

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
  return launch(static_cast<float*>(nullptr));
}

}  // namespace tr::cuda

// SPDX-License-Identifier: GPL-3.0-or-later
// 16-byte vectors for the memory-bound kernels: a thread moves 8 FP16 or
// BF16 values (4 FP32) with one load and one store instead of one each. The
// values go through half_io.cuh's load and store one by one, so a kernel's
// arithmetic and bits are those of its scalar form.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"

namespace tr::cuda {

template <class T>
constexpr int kVec = 16 / static_cast<int>(sizeof(T));

template <class T>
struct alignas(16) Vec {
  T v[kVec<T>];
};

// The vector of elements [at, at + kVec<T>), `at` a multiple of kVec<T>.
template <class T>
__device__ inline Vec<T> load_vec(const T* p, uint64_t at) {
  return *reinterpret_cast<const Vec<T>*>(p + at);
}
template <class T>
__device__ inline void store_vec(T* p, uint64_t at, const Vec<T>& v) {
  *reinterpret_cast<Vec<T>*>(p + at) = v;
}

// Whether `count` elements (a multiple of the vector) at each of `data` (null
// ones skipped) can be moved in vectors: every start on 16 bytes.
template <class T>
bool vectorisable(uint64_t count, std::initializer_list<const void*> data) {
  if (count == 0 || count % static_cast<uint64_t>(kVec<T>) != 0) return false;
  for (const void* p : data)
    if (p && !aligned16(p)) return false;
  return true;
}

// 32-bit indices when every element index fits.
inline bool small_index(uint64_t elements) {
  return elements <= 0x7FFFFFFFu;
}

}  // namespace tr::cuda

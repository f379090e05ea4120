// SPDX-License-Identifier: GPL-3.0-or-later
// Elementwise kernels on the CPU (compact FP32 and INT32 labels; Add also
// reads and writes compact bfloat16 where it lies).
#include "backends/cpu/kernels/elementwise.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"
#include "runtime/concat_slices.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_floats;
using detail::parallel_ranges;

namespace {

// A copy, or an add into a gradient slot that another consumer already wrote.
void copy_or_add(const KernelArgs& a, size_t out_index, const float* src, int64_t n) {
  if (!has_out(a, out_index)) return;
  float* dst = a.out[out_index].f32();
  if (!a.accumulate(out_index)) {
    if (dst == src) return;
    parallel_floats(n, [&](int64_t lo, int64_t hi) {
      std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(float));
    });
    return;
  }
  parallel_floats(n, [&](int64_t lo, int64_t hi) {
    float* d = dst + lo;
    const float* s = src + lo;
    for (int64_t i = 0; i < hi - lo; ++i) d[i] += s[i];
  });
}

// Compact bfloat16 operands are read and written where they lie, a block of
// values at a time widened on the stack: the staged path's bits (FP32 sums,
// rounded once; a copy is a copy) without its chunks' bookkeeping
// (kBf16Block: bf16_arrays.h).

// y[i] = x0[i] + x1[i] for i in [lo, hi), bfloat16 (y may be x0).
void add_bf16(const uint16_t* x0, const uint16_t* x1, uint16_t* y, int64_t lo, int64_t hi) {
  float u[kBf16Block], v[kBf16Block];
  for (int64_t b = lo; b < hi; b += kBf16Block) {
    const int64_t m = std::min(kBf16Block, hi - b);
    widen_bf16(x0 + b, u, m);
    widen_bf16(x1 + b, v, m);
    for (int64_t i = 0; i < m; ++i) u[i] += v[i];
    narrow_to_bf16(u, y + b, m);
  }
}

// in [x0, x1] out [y], bfloat16
bool add_fwd_bf16(const KernelArgs& a) {
  if (!detail::compact_operands(a, 2, 1, {0, 1}, {0})) return false;
  const auto* x0 = static_cast<const uint16_t*>(a.in[0].data);
  const auto* x1 = static_cast<const uint16_t*>(a.in[1].data);
  auto* y = static_cast<uint16_t*>(a.out[0].data);
  const int64_t n = a.out[0].shape().elements();
  parallel_ranges(
      n, 3 * n,  // values read and written
      [&](int64_t lo, int64_t hi) { add_bf16(x0, x1, y, lo, hi); }, kBf16Line);
  return true;
}

// One output of add_bwd in bfloat16: dy's bits, or dy added on.
void copy_or_add_bf16(const KernelArgs& a, size_t out_index, const uint16_t* dy, int64_t n) {
  if (!has_out(a, out_index)) return;
  auto* dst = static_cast<uint16_t*>(a.out[out_index].data);
  const bool add = a.accumulate(out_index);
  if (!add && dst == dy) return;
  parallel_ranges(
      n, (add ? 3 : 2) * n,  // values read and written
      [&](int64_t lo, int64_t hi) {
        if (add)
          add_bf16(dst, dy, dst, lo, hi);
        else
          std::memcpy(dst + lo, dy + lo, static_cast<size_t>(hi - lo) * sizeof(uint16_t));
      },
      kBf16Line);
}

// Both outputs one tensor (x + x): dy added twice in float onto what the
// slot holds (or onto nothing) and rounded once, as staging and the CUDA
// twin round it.
void add_twice_bf16(const KernelArgs& a, const uint16_t* dy, int64_t n) {
  auto* dst = static_cast<uint16_t*>(a.out[0].data);
  const bool add0 = a.accumulate(0), add1 = a.accumulate(1);
  parallel_ranges(
      n, 3 * n,
      [&](int64_t lo, int64_t hi) {
        float u[kBf16Block] = {}, g[kBf16Block];  // u is read unused without add0
        for (int64_t b = lo; b < hi; b += kBf16Block) {
          const int64_t m = std::min(kBf16Block, hi - b);
          widen_bf16(dy + b, g, m);
          if (add0) widen_bf16(dst + b, u, m);
          for (int64_t i = 0; i < m; ++i) u[i] = detail::onto_one_slot(add0, add1, u[i], g[i]);
          narrow_to_bf16(u, dst + b, m);
        }
      },
      kBf16Line);
}

// in [dy] out [dx0, dx1], bfloat16
bool add_bwd_bf16(const KernelArgs& a) {
  if (!detail::compact_operands(a, 1, 2, {0}, {0, 1})) return false;
  const auto* dy = static_cast<const uint16_t*>(a.in[0].data);
  const int64_t n = a.in[0].shape().elements();
  if (has_out(a, 0) && a.out[0].data == a.out[1].data) {
    add_twice_bf16(a, dy, n);
    return true;
  }
  copy_or_add_bf16(a, 0, dy, n);
  copy_or_add_bf16(a, 1, dy, n);
  return true;
}

}  // namespace

void add_fwd(const KernelArgs& a) {
  if (add_fwd_bf16(a) || detail::run_16bit_elementwise(a, add_fwd)) return;
  const float* x0 = a.in[0].f32();
  const float* x1 = a.in[1].f32();
  float* y = a.out[0].f32();
  parallel_floats(a.out[0].shape().elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x0[i] + x1[i];
  });
}

void add_bwd(const KernelArgs& a) {
  if (add_bwd_bf16(a) || detail::run_16bit_elementwise(a, add_bwd)) return;
  const float* dy = a.in[0].f32();
  const int64_t n = a.in[0].shape().elements();
  // In order: when both outputs are one tensor, out[1] carries the accumulate
  // flag and adds onto what out[0] just wrote.
  copy_or_add(a, 0, dy, n);
  copy_or_add(a, 1, dy, n);
}

void concat_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, concat_fwd)) return;
  const int64_t c = a.out[0].shape().c;
  const int64_t rows = a.out[0].shape().elements() / c;
  float* y = a.out[0].f32();
  parallel_ranges(rows, rows * c, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      int64_t from = 0;
      for (const TensorArg& x : a.in) {
        const int64_t cq = x.shape().c;
        std::memcpy(y + r * c + from, x.f32() + r * cq, static_cast<size_t>(cq) * sizeof(float));
        from += cq;
      }
    }
  });
}

void concat_bwd(const KernelArgs& a) {
  bool any = false;
  for (size_t q = 0; q < a.out.size(); ++q) any = any || has_out(a, q);
  if (!any) return;
  if (detail::run_16bit_staged(a, concat_bwd)) return;
  const int64_t c = a.in[0].shape().c;
  const int64_t rows = a.in[0].shape().elements() / c;
  std::vector<int64_t> from;
  std::string error;
  if (!concat_slices(a.out, c, from, error))
    throw std::invalid_argument("CONCAT_BWD" + a.where() + ": " + error);
  const float* dy = a.in[0].f32();
  // In port order: when two outputs are one tensor (x concatenated with
  // itself), the later one carries the accumulate flag and adds onto it.
  for (size_t q = 0; q < a.out.size(); ++q) {
    if (!has_out(a, q)) continue;
    const int64_t width = a.out[q].shape().c;
    float* dx = a.out[q].f32();
    const bool acc = a.accumulate(q);
    parallel_ranges(rows, rows * width, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const float* src = dy + r * c + from[q];
        float* dst = dx + r * width;
        if (acc)
          for (int64_t k = 0; k < width; ++k) dst[k] += src[k];
        else
          std::memcpy(dst, src, static_cast<size_t>(width) * sizeof(float));
      }
    });
  }
}

void flatten_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, flatten_fwd)) return;
  copy_or_add(a, 0, a.in[0].f32(), a.in[0].shape().elements());
}

void flatten_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, flatten_bwd)) return;
  copy_or_add(a, 0, a.in[0].f32(), a.in[0].shape().elements());
}

void identity(const KernelArgs& a) {
  if (a.in.empty() || a.out.empty()) return;  // nothing to copy
  if (detail::run_16bit_staged(a, identity)) return;
  copy_or_add(a, 0, a.in[0].f32(), a.in[0].shape().elements());
}

void copy_labels(const KernelArgs& a) {
  const int64_t n = a.in[0].shape().elements();
  std::memcpy(a.out[0].i32(), a.in[0].i32(), static_cast<size_t>(n) * sizeof(int32_t));
}

}  // namespace tr::cpu

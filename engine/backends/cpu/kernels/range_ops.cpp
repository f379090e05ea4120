// SPDX-License-Identifier: GPL-3.0-or-later
// CPU RANGE kernels: clears, copies, 16-bit casts, AMP scaling, NaN check, BN parameters, EMA.
#include "backends/cpu/kernels/range_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/parallel.h"
#include "runtime/bn_eq_operands.h"

namespace tr::cpu {

using detail::parallel_floats;
using detail::parallel_ranges;
using detail::threads_for;

namespace {

// Span sizes as loop counts (spans are far below 2^63 bytes).
int64_t span_size(uint64_t n) {
  return static_cast<int64_t>(n);
}

// Byte ranges cut on cache lines; a byte costs a quarter of a float.
template <class F>
void parallel_bytes(uint64_t bytes, F&& f) {
  const int64_t n = span_size(bytes);
  parallel_ranges(n, n / 4, f, 64);
}

uint64_t common_floats(const SpanArg& x, const SpanArg& y) {
  return std::min(x.floats(), y.floats());
}

}  // namespace

void range_clear(const KernelArgs& a) {
  for (const SpanArg& s : a.out_spans) {
    uint8_t* p = static_cast<uint8_t*>(s.data);
    parallel_bytes(s.bytes, [&](int64_t lo, int64_t hi) {
      std::memset(p + lo, 0, static_cast<size_t>(hi - lo));
    });
  }
}

void range_copy(const KernelArgs& a) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  if (in.data == out.data) return;
  const uint64_t n = std::min(in.bytes, out.bytes);
  const uint8_t* src = static_cast<const uint8_t*>(in.data);
  uint8_t* dst = static_cast<uint8_t*>(out.data);
  // Overlapping spans must move in one direction, on one thread.
  const auto s0 = reinterpret_cast<uintptr_t>(src), d0 = reinterpret_cast<uintptr_t>(dst);
  if (s0 < d0 + n && d0 < s0 + n) {
    std::memmove(dst, src, n);
    return;
  }
  parallel_bytes(n, [&](int64_t lo, int64_t hi) {
    std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo));
  });
}

void range_accumulate(const KernelArgs& a) {
  const float* in = a.in_spans[0].f32();
  float* out = a.out_spans[0].f32();
  parallel_floats(span_size(common_floats(a.in_spans[0], a.out_spans[0])),
                  [&](int64_t lo, int64_t hi) {
                    float* o = out + lo;
                    const float* x = in + lo;
                    for (int64_t i = 0; i < hi - lo; ++i) o[i] += x[i];
                  });
}

void range_scale(const KernelArgs& a) {
  // An overflowed step is skipped anyway; its gradients are left as they are.
  if (a.scalar(ScalarSlot::OVERFLOW) != 0.0f) return;
  const float s = a.scalar(ScalarSlot::INV_LOSS_SCALE);
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans.empty() ? in : a.out_spans[0];
  const float* x = in.f32();
  float* y = out.f32();
  parallel_floats(span_size(common_floats(in, out)), [&](int64_t lo, int64_t hi) {
    const float* xr = x + lo;
    float* yr = y + lo;
    const float sr = s;  // a copy: the stores could alias the captured original
    for (int64_t i = 0; i < hi - lo; ++i) yr[i] = xr[i] * sr;
  });
}

void range_sqrt(const KernelArgs& a) {
  float* x = a.out_spans[0].f32();
  parallel_floats(span_size(a.out_spans[0].floats()), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) x[i] = std::sqrt(x[i]);
  });
}

void range_nan_check(const KernelArgs& a) {
  // Integer test of the exponent bits: an OR-reduction the compiler
  // vectorises, which a float isfinite() reduction would not be.
  // An OR does not care about order, so threads may combine in any.
  uint32_t bad = 0;
  for (const SpanArg& s : a.in_spans) {
    const uint32_t* bits = static_cast<const uint32_t*>(s.data);
    const int64_t n = span_size(s.floats());
    if (threads_for(n) <= 1) {
      for (int64_t i = 0; i < n; ++i) bad |= (bits[i] & 0x7F800000u) == 0x7F800000u ? 1u : 0u;
      continue;
    }
#pragma omp parallel for reduction(| : bad) schedule(static) num_threads(threads_for(n))
    for (int64_t i = 0; i < n; ++i) bad |= (bits[i] & 0x7F800000u) == 0x7F800000u ? 1u : 0u;
  }
  if (bad) a.scalars[static_cast<int>(ScalarSlot::OVERFLOW)] = 1.0f;
}

void range_cast_fp32_to_fp16(const KernelArgs& a) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  narrow_to_half(in.f32(), static_cast<uint16_t*>(out.data),
                 span_size(std::min(in.bytes / 4, out.bytes / 2)));
}

void range_cast_fp16_to_fp32(const KernelArgs& a) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  widen_half(static_cast<const uint16_t*>(in.data), out.f32(),
             span_size(std::min(in.bytes / 2, out.bytes / 4)));
}

void range_cast_fp32_to_bf16(const KernelArgs& a) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  narrow_to_bf16(in.f32(), static_cast<uint16_t*>(out.data),
                 span_size(std::min(in.bytes / 4, out.bytes / 2)));
}

void range_cast_bf16_to_fp32(const KernelArgs& a) {
  const SpanArg& in = a.in_spans[0];
  const SpanArg& out = a.out_spans[0];
  widen_bf16(static_cast<const uint16_t*>(in.data), out.f32(),
             span_size(std::min(in.bytes / 2, out.bytes / 4)));
}

void range_bn_eq_params(const KernelArgs& a) {
  for (const BnEqLayer& l : bn_eq_layers(a))
    for (int64_t k = 0; k < l.channels; ++k) {
      const double sc = l.gamma[k] / std::sqrt(static_cast<double>(l.var[k]) + l.eps);
      l.scale[k] = static_cast<float>(sc);
      l.bias[k] = static_cast<float>(l.beta[k] - l.mean[k] * sc);
    }
}

void range_ema_update(const KernelArgs& a) {
  // A step AMP skipped left the weights as they were; the average stays too.
  if (a.scalars && a.scalar(ScalarSlot::OVERFLOW) != 0.0f) return;
  const double decay = a.constants().ema_decay;
  const float d = static_cast<float>(decay);
  // 1 - d in double: 1.0f - 0.999f is off by 1e-5 relative.
  const float keep_new = static_cast<float>(1.0 - decay);
  const float* w = a.in_spans[0].f32();
  float* e = a.out_spans[0].f32();
  parallel_floats(span_size(common_floats(a.in_spans[0], a.out_spans[0])),
                  [&](int64_t lo, int64_t hi) {
                    const float* wr = w + lo;
                    float* er = e + lo;
                    // Copies: the stores could alias the captured originals.
                    const float dr = d, kr = keep_new;
                    for (int64_t i = 0; i < hi - lo; ++i) er[i] = dr * er[i] + kr * wr[i];
                  });
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// The residual join's Add and ReLU in one pass each way (ADD_RELU_FWD/BWD):
// the bits of ADD_FWD then RELU_FWD, and of RELU_BWD then ADD_BWD, in every
// storage type, without the sum or the masked gradient going through memory.
#include "backends/cpu/kernels/add_relu.h"

#include <algorithm>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::has_out;

namespace {

// The 16-bit formats, converted a block at a time on the stack (kBf16Block
// values, as the Add's own bfloat16 path).
struct Bf16Format {
  static constexpr uint16_t kInfinity = 0x7F80;  // without its sign; NaNs lie above
  static void widen(const uint16_t* in, float* out, int64_t n) { widen_bf16(in, out, n); }
  static void narrow(const float* in, uint16_t* out, int64_t n) { narrow_to_bf16(in, out, n); }
};
struct HalfFormat {
  static constexpr uint16_t kInfinity = 0x7C00;
  static void widen(const uint16_t* in, float* out, int64_t n) { widen_half(in, out, n); }
  static void narrow(const float* in, uint16_t* out, int64_t n) { narrow_to_half(in, out, n); }
};

// The ReLU of a stored 16-bit value, as widening it, x < 0 ? 0 : x and
// narrowing again give it: a negative value other than -0 and NaN is +0.
template <class Format>
uint16_t relu_bits(uint16_t b) {
  const uint16_t magnitude = b & 0x7FFF;
  return (b & 0x8000) && magnitude != 0 && magnitude <= Format::kInfinity ? uint16_t{0} : b;
}

// Every operand of `a` present is compact and of `type`.
bool all_compact(const KernelArgs& a, DType type) {
  auto fits = [&](const TensorArg& t) {
    return !t.data || (t.desc && t.desc->is_compact() && t.desc->dtype == type);
  };
  return std::all_of(a.in.begin(), a.in.end(), fits) &&
         std::all_of(a.out.begin(), a.out.end(), fits);
}

// ---- forward --------------------------------------------------------------------

// The sum rounded to storage, then the ReLU on the stored value: the
// unfused pair's bits (a negative sum that rounds to -0 stays -0).
template <class Format>
void add_relu_block(const uint16_t* x0, const uint16_t* x1, uint16_t* y, int64_t lo, int64_t hi) {
  float u[kBf16Block], v[kBf16Block];
  for (int64_t b = lo; b < hi; b += kBf16Block) {
    const int64_t m = std::min(kBf16Block, hi - b);
    Format::widen(x0 + b, u, m);
    Format::widen(x1 + b, v, m);
    for (int64_t i = 0; i < m; ++i) u[i] += v[i];
    Format::narrow(u, y + b, m);
    for (int64_t i = 0; i < m; ++i) y[b + i] = relu_bits<Format>(y[b + i]);
  }
}

template <class Format>
void add_relu_fwd_16bit(const KernelArgs& a) {
  const auto* x0 = static_cast<const uint16_t*>(a.in[0].data);
  const auto* x1 = static_cast<const uint16_t*>(a.in[1].data);
  auto* y = static_cast<uint16_t*>(a.out[0].data);
  const int64_t n = a.out[0].shape().elements();
  detail::parallel_ranges(
      n, 3 * n,  // values read and written
      [&](int64_t lo, int64_t hi) { add_relu_block<Format>(x0, x1, y, lo, hi); }, kBf16Line);
}

// Padded 16-bit maps: the Add's own path, then the ReLU over the stored sums
// (padding lanes are zero, which the ReLU keeps).
template <class Format>
void relu_in_place_16bit(const TensorArg& y) {
  auto* p = static_cast<uint16_t*>(y.data);
  const DTensor& d = *y.desc;
  const int64_t n = d.shape.n * d.shape.h * d.shape.w * d.padded_c();
  detail::parallel_ranges(
      n, 2 * n,
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) p[i] = relu_bits<Format>(p[i]);
      },
      kBf16Line);
}

void add_relu_fwd_fp32(const KernelArgs& a) {
  const float* x0 = a.in[0].f32();
  const float* x1 = a.in[1].f32();
  float* y = a.out[0].f32();
  // NaN passes through, as in torch.relu, so the NaN check still sees it.
  detail::parallel_floats(a.out[0].shape().elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float s = x0[i] + x1[i];
      y[i] = s < 0.0f ? 0.0f : s;
    }
  });
}

// ---- backward -------------------------------------------------------------------

// dx0 and dx1 (+)= dy where y > 0, one pass writing both (either may be
// absent: its pointer is null).
template <bool Add0, bool Add1>
void masked_to_both(const float* y, const float* dy, float* d0, float* d1, int64_t n) {
  detail::parallel_floats(n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const float g = select(y[i] > 0.0f, dy[i], 0.0f);
      if (d0) d0[i] = Add0 ? d0[i] + g : g;
      if (d1) d1[i] = Add1 ? d1[i] + g : g;
    }
  });
}

void add_relu_bwd_fp32(const KernelArgs& a) {
  const float* dy = a.in[0].f32();
  const float* y = a.in[1].f32();
  const int64_t n = a.in[0].shape().elements();
  float* d0 = has_out(a, 0) ? a.out[0].f32() : nullptr;
  float* d1 = has_out(a, 1) ? a.out[1].f32() : nullptr;
  const bool add0 = d0 && a.accumulate(0), add1 = d1 && a.accumulate(1);
  if (d0 && d0 == d1) {
    // One tensor for both (x + x): out[1] adds onto what out[0] wrote, as
    // ADD_BWD's two passes do, here with y and dy read before the write.
    detail::parallel_floats(n, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        d0[i] = detail::onto_one_slot(add0, add1, d0[i], select(y[i] > 0.0f, dy[i], 0.0f));
      }
    });
    return;
  }
  if (add0 && add1) return masked_to_both<true, true>(y, dy, d0, d1, n);
  if (add0) return masked_to_both<true, false>(y, dy, d0, d1, n);
  if (add1) return masked_to_both<false, true>(y, dy, d0, d1, n);
  masked_to_both<false, false>(y, dy, d0, d1, n);
}

// The masked gradient is dy's value or zero, exact in storage: each output
// takes it, or adds it rounding once, as ADD_BWD's copy or add of RELU_BWD's.
// One tensor for both outputs adds it twice in float and rounds once, as
// the staged ADD_BWD does.
template <class Format>
void add_relu_bwd_block(const KernelArgs& a, int64_t lo, int64_t hi) {
  const auto* dy = static_cast<const uint16_t*>(a.in[0].data);
  const auto* y = static_cast<const uint16_t*>(a.in[1].data);
  const bool same = has_out(a, 0) && a.out[0].data == a.out[1].data;
  const bool has[2] = {has_out(a, 0), has_out(a, 1)};
  const bool add[2] = {a.accumulate(0), a.accumulate(1)};
  float g[kBf16Block], u[kBf16Block];
  for (int64_t b = lo; b < hi; b += kBf16Block) {
    const int64_t m = std::min(kBf16Block, hi - b);
    Format::widen(y + b, u, m);
    Format::widen(dy + b, g, m);
    for (int64_t i = 0; i < m; ++i) g[i] = select(u[i] > 0.0f, g[i], 0.0f);
    for (size_t k = 0; k < (same ? 1 : 2); ++k) {
      if (!has[k]) continue;
      auto* dx = static_cast<uint16_t*>(a.out[k].data) + b;
      if (!add[k] && !same) {
        Format::narrow(g, dx, m);
        continue;
      }
      if (add[k]) Format::widen(dx, u, m);
      if (same)
        for (int64_t i = 0; i < m; ++i) u[i] = detail::onto_one_slot(add[0], add[1], u[i], g[i]);
      else
        for (int64_t i = 0; i < m; ++i) u[i] += g[i];
      Format::narrow(u, dx, m);
    }
  }
}

template <class Format>
void add_relu_bwd_16bit(const KernelArgs& a) {
  const int64_t n = a.in[0].shape().elements();
  detail::parallel_ranges(
      n, 4 * n, [&](int64_t lo, int64_t hi) { add_relu_bwd_block<Format>(a, lo, hi); }, kBf16Line);
}

// Calls body(Format{}) for compact 16-bit operands of one type; false otherwise.
template <class Body>
bool with_compact_16bit(const KernelArgs& a, Body body) {
  if (all_compact(a, DType::BF16)) return body(Bf16Format{}), true;
  if (all_compact(a, DType::FP16)) return body(HalfFormat{}), true;
  return false;
}

}  // namespace

void add_relu_fwd(const KernelArgs& a) {
  if (with_compact_16bit(a, [&](auto f) { add_relu_fwd_16bit<decltype(f)>(a); })) return;
  if (detail::run_16bit_elementwise(a, add_fwd)) {
    if (a.out[0].desc->dtype == DType::BF16)
      relu_in_place_16bit<Bf16Format>(a.out[0]);
    else
      relu_in_place_16bit<HalfFormat>(a.out[0]);
    return;
  }
  add_relu_fwd_fp32(a);
}

void add_relu_bwd(const KernelArgs& a) {
  if (with_compact_16bit(a, [&](auto f) { add_relu_bwd_16bit<decltype(f)>(a); })) return;
  if (detail::run_16bit_elementwise(a, add_relu_bwd_fp32)) return;
  add_relu_bwd_fp32(a);
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/kernels/tokens.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/bf16_convert.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_floats;

namespace {

void counts(const KernelArgs& a, size_t ins, size_t outs, const char* op) {
  if (a.in.size() != ins || a.out.size() != outs || !a.in[0].desc)
    throw std::invalid_argument(std::string(op) + a.where() + ": takes " + std::to_string(ins) +
                                " inputs and " + std::to_string(outs) + " outputs");
}

// How a kernel reads and writes its values: FP32 as they lie, or compact
// bfloat16 widened as read and rounded once as written, which gives the
// staged path's bits (half_staging.h) without its FP32 copies.
struct TokenF32 {
  using T = float;
  static float get(const float* p, int64_t i) { return p[i]; }
  static void put(float* p, int64_t i, float v) { p[i] = v; }
};
struct TokenBf16 {
  using T = uint16_t;
  static float get(const uint16_t* p, int64_t i) { return bf16_bits_to_float(p[i]); }
  static void put(uint16_t* p, int64_t i, float v) { p[i] = float_to_bf16_bits(v); }
};

template <class E>
const typename E::T* token_in(const KernelArgs& a, size_t i) {
  return static_cast<const typename E::T*>(a.in[i].data);
}
template <class E>
typename E::T* token_out(const KernelArgs& a, size_t i) {
  return static_cast<typename E::T*>(a.out[i].data);
}

// out[i] = v(i), or out[i] + v(i) when accumulating, for i in [0, n).
template <class E, class V>
void store_values(bool accumulate, typename E::T* out, int64_t n, V v) {
  if (accumulate) {
    for (int64_t i = 0; i < n; ++i) E::put(out, i, E::get(out, i) + v(i));
  } else {
    for (int64_t i = 0; i < n; ++i) E::put(out, i, v(i));
  }
}

// out (+)= the sum over the batch of `samples` blocks of `per` values, `from`
// values apart, each value summed in sample order.
template <class E>
void batch_sum(const typename E::T* in, int64_t samples, int64_t per, int64_t from,
               typename E::T* out, bool accumulate) {
  parallel_floats(
      per,
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          float s = 0.0f;
          for (int64_t n = 0; n < samples; ++n) s += E::get(in, n * from + i);
          E::put(out, i, accumulate ? E::get(out, i) + s : s);
        }
      },
      samples);
}

// in [x, e] out [y]
template <class E>
void pos_embed_forward(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  const int64_t per = s.h * s.w * s.c;
  const auto* x = token_in<E>(a, 0);
  const auto* e = token_in<E>(a, 1);
  auto* y = token_out<E>(a, 0);
  // A sample at a time: no index arithmetic per value (a remainder by the
  // sample's size cost vit-tiny-fashion 1.6 ms a step), and the loop vectorises.
  detail::parallel_ranges(s.n, s.n * per, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const auto* xr = x + n * per;
      auto* yr = y + n * per;
      for (int64_t i = 0; i < per; ++i) E::put(yr, i, E::get(xr, i) + E::get(e, i));
    }
  });
}

// in [dy] out [de, dx]
template <class E>
void pos_embed_backward(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  const int64_t per = s.h * s.w * s.c;
  const auto* dy = token_in<E>(a, 0);
  if (has_out(a, 0)) batch_sum<E>(dy, s.n, per, per, token_out<E>(a, 0), a.accumulate(0));
  if (has_out(a, 1)) {
    auto* dx = token_out<E>(a, 1);
    const bool acc = a.accumulate(1);
    parallel_floats(s.n * per, [&](int64_t lo, int64_t hi) {
      store_values<E>(acc, dx + lo, hi - lo, [&](int64_t i) { return E::get(dy, lo + i); });
    });
  }
}

// in [x, token] out [y]
template <class E>
void class_token_forward(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, per = s.h * s.w * c;
  const auto* x = token_in<E>(a, 0);
  const auto* token = token_in<E>(a, 1);
  auto* y = token_out<E>(a, 0);
  for (int64_t n = 0; n < s.n; ++n) {
    std::copy(token, token + c, y + n * (per + c));
    std::copy(x + n * per, x + (n + 1) * per, y + n * (per + c) + c);
  }
}

// in [dy] out [dtoken, dx]
template <class E>
void class_token_backward(const KernelArgs& a) {
  const Shape& s = a.in[0].shape();  // [N,1,1+T,C]
  const int64_t c = s.c, per = (s.h * s.w - 1) * c;
  const auto* dy = token_in<E>(a, 0);
  if (has_out(a, 0)) batch_sum<E>(dy, s.n, c, per + c, token_out<E>(a, 0), a.accumulate(0));
  if (has_out(a, 1)) {
    auto* dx = token_out<E>(a, 1);
    const bool acc = a.accumulate(1);
    for (int64_t n = 0; n < s.n; ++n)
      store_values<E>(acc, dx + n * per, per,
                      [&](int64_t i) { return E::get(dy, n * (per + c) + c + i); });
  }
}

}  // namespace

// Compact bfloat16 operands run as they lie; any other 16-bit layout is staged.
void pos_embed_fwd(const KernelArgs& a) {
  if (detail::compact_operands(a, 2, 1, {0, 1}, {0})) return pos_embed_forward<TokenBf16>(a);
  if (detail::run_16bit_staged(a, &pos_embed_fwd)) return;
  counts(a, 2, 1, "POS_EMBED_FWD");
  pos_embed_forward<TokenF32>(a);
}

void pos_embed_bwd(const KernelArgs& a) {
  if (detail::compact_operands(a, 1, 2, {0}, {0, 1})) return pos_embed_backward<TokenBf16>(a);
  if (detail::run_16bit_staged(a, &pos_embed_bwd)) return;
  counts(a, 1, 2, "POS_EMBED_BWD");
  pos_embed_backward<TokenF32>(a);
}

void class_token_fwd(const KernelArgs& a) {
  if (detail::compact_operands(a, 2, 1, {0, 1}, {0})) return class_token_forward<TokenBf16>(a);
  if (detail::run_16bit_staged(a, &class_token_fwd)) return;
  counts(a, 2, 1, "CLASS_TOKEN_FWD");
  class_token_forward<TokenF32>(a);
}

void class_token_bwd(const KernelArgs& a) {
  if (!has_out(a, 1) && !has_out(a, 0)) return;
  if (detail::compact_operands(a, 1, 2, {0}, {0, 1})) return class_token_backward<TokenBf16>(a);
  if (detail::run_16bit_staged(a, &class_token_bwd)) return;
  counts(a, 1, 2, "CLASS_TOKEN_BWD");
  class_token_backward<TokenF32>(a);
}

void token_pool_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &token_pool_fwd)) return;
  counts(a, 1, 1, "TOKEN_POOL_FWD");
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, per = s.h * s.w * c;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  for (int64_t n = 0; n < s.n; ++n) std::copy(x + n * per, x + n * per + c, y + n * c);
}

void token_pool_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &token_pool_bwd)) return;
  counts(a, 1, 1, "TOKEN_POOL_BWD");
  if (!has_out(a, 0)) return;
  const Shape& s = a.out[0].shape();
  const int64_t c = s.c, per = s.h * s.w * c;
  const float* dy = a.in[0].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  for (int64_t n = 0; n < s.n; ++n) {
    detail::store(acc, dx + n * per, c, [&](int64_t i) { return dy[n * c + i]; });
    // The other tokens get nothing: a copy writes zeros, an add leaves them.
    if (!acc) std::fill(dx + n * per + c, dx + (n + 1) * per, 0.0f);
  }
}

}  // namespace tr::cpu

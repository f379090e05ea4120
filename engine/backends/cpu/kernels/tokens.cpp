// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/kernels/tokens.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_floats;

namespace {

void counts(const KernelArgs& a, size_t ins, size_t outs, const char* op) {
  if (a.in.size() != ins || a.out.size() != outs || !a.in[0].desc)
    throw std::invalid_argument(std::string(op) + a.where() + ": takes " + std::to_string(ins) +
                                " inputs and " + std::to_string(outs) + " outputs");
}

// out (+)= the sum over the batch of `samples` blocks of `per` values, `from`
// values apart, each value summed in sample order.
void batch_sum(const float* in, int64_t samples, int64_t per, int64_t from, float* out,
               bool accumulate) {
  parallel_floats(
      per,
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          float s = 0.0f;
          for (int64_t n = 0; n < samples; ++n) s += in[n * from + i];
          out[i] = accumulate ? out[i] + s : s;
        }
      },
      samples);
}

}  // namespace

void pos_embed_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &pos_embed_fwd)) return;
  counts(a, 2, 1, "POS_EMBED_FWD");
  const Shape& s = a.in[0].shape();
  const int64_t per = s.h * s.w * s.c;
  const float* x = a.in[0].f32();
  const float* e = a.in[1].f32();
  float* y = a.out[0].f32();
  // A sample at a time: no index arithmetic per value (a remainder by the
  // sample's size cost vit-tiny-fashion 1.6 ms a step), and the loop vectorises.
  detail::parallel_ranges(s.n, s.n * per, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n) {
      const float* xr = x + n * per;
      float* yr = y + n * per;
      for (int64_t i = 0; i < per; ++i) yr[i] = xr[i] + e[i];
    }
  });
}

void pos_embed_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &pos_embed_bwd)) return;
  counts(a, 1, 2, "POS_EMBED_BWD");
  const Shape& s = a.in[0].shape();
  const int64_t per = s.h * s.w * s.c;
  const float* dy = a.in[0].f32();
  if (has_out(a, 0)) batch_sum(dy, s.n, per, per, a.out[0].f32(), a.accumulate(0));
  if (has_out(a, 1)) {
    float* dx = a.out[1].f32();
    const bool acc = a.accumulate(1);
    parallel_floats(s.n * per, [&](int64_t lo, int64_t hi) {
      detail::store(acc, dx + lo, hi - lo, [&](int64_t i) { return dy[lo + i]; });
    });
  }
}

void class_token_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &class_token_fwd)) return;
  counts(a, 2, 1, "CLASS_TOKEN_FWD");
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, per = s.h * s.w * c;
  const float* x = a.in[0].f32();
  const float* token = a.in[1].f32();
  float* y = a.out[0].f32();
  for (int64_t n = 0; n < s.n; ++n) {
    std::copy(token, token + c, y + n * (per + c));
    std::copy(x + n * per, x + (n + 1) * per, y + n * (per + c) + c);
  }
}

void class_token_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, &class_token_bwd)) return;
  counts(a, 1, 2, "CLASS_TOKEN_BWD");
  if (!has_out(a, 1) && !has_out(a, 0)) return;
  const Shape& s = a.in[0].shape();  // [N,1,1+T,C]
  const int64_t c = s.c, per = (s.h * s.w - 1) * c;
  const float* dy = a.in[0].f32();
  if (has_out(a, 0)) batch_sum(dy, s.n, c, per + c, a.out[0].f32(), a.accumulate(0));
  if (has_out(a, 1)) {
    float* dx = a.out[1].f32();
    const bool acc = a.accumulate(1);
    for (int64_t n = 0; n < s.n; ++n)
      detail::store(acc, dx + n * per, per, [&](int64_t i) { return dy[n * (per + c) + c + i]; });
  }
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

// SPDX-License-Identifier: GPL-3.0-or-later
// ReLU, Tanh and SiLU kernels on the CPU (compact FP32, by element count).
#include "backends/cpu/kernels/activations.h"

#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_floats;
using detail::store;

namespace {

// Rough cost of one element of tanh/sigmoid in units of a streamed float, so
// that mid-sized tensors of them already go parallel.
constexpr int64_t kPolynomialCost = 8;

}  // namespace

void relu_fwd(const KernelArgs& a) {
  if (detail::run_fp16_staged(a, relu_fwd)) return;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  // NaN passes through, as in torch.relu, so the NaN check still sees it.
  parallel_floats(a.in[0].shape().elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  });
}

void tanh_fwd(const KernelArgs& a) {
  if (detail::run_fp16_staged(a, tanh_fwd)) return;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  parallel_floats(
      a.in[0].shape().elements(),
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = tanh_approx(x[i]);
      },
      kPolynomialCost);
}

void silu_fwd(const KernelArgs& a) {
  if (detail::run_fp16_staged(a, silu_fwd)) return;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  parallel_floats(
      a.in[0].shape().elements(),
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = x[i] * sigmoid_approx(x[i]);
      },
      kPolynomialCost);
}

void relu_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_fp16_staged(a, relu_bwd)) return;
  const float* y = a.in[0].f32();
  const float* dy = a.in[1].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  // y > 0 exactly where x > 0, so the output carries the mask (PyTorch's
  // threshold_backward also passes nothing at x == 0).
  parallel_floats(a.in[1].shape().elements(), [&](int64_t lo, int64_t hi) {
    const float* yr = y + lo;
    const float* gr = dy + lo;
    store(acc, dx + lo, hi - lo, [&](int64_t i) { return select(yr[i] > 0.0f, gr[i], 0.0f); });
  });
}

void tanh_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_fp16_staged(a, tanh_bwd)) return;
  const float* y = a.in[0].f32();
  const float* dy = a.in[1].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  parallel_floats(a.in[1].shape().elements(), [&](int64_t lo, int64_t hi) {
    const float* yr = y + lo;
    const float* gr = dy + lo;
    store(acc, dx + lo, hi - lo, [&](int64_t i) { return gr[i] * (1.0f - yr[i] * yr[i]); });
  });
}

void silu_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_fp16_staged(a, silu_bwd)) return;
  const float* x = a.in[0].f32();
  const float* dy = a.in[1].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  parallel_floats(
      a.in[1].shape().elements(),
      [&](int64_t lo, int64_t hi) {
        const float* xr = x + lo;
        const float* gr = dy + lo;
        store(acc, dx + lo, hi - lo, [&](int64_t i) {
          const float s = sigmoid_approx(xr[i]);
          return gr[i] * s * (1.0f + xr[i] * (1.0f - s));
        });
      },
      kPolynomialCost);
}

}  // namespace tr::cpu

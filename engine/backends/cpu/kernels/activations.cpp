// SPDX-License-Identifier: GPL-3.0-or-later
// ReLU, Tanh and SiLU kernels on the CPU (compact FP32, by element count).
#include "backends/cpu/kernels/activations.h"

#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/kernel_util.h"

namespace tr::cpu {

using detail::has_out;
using detail::store;

void relu_fwd(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const int64_t n = a.in[0].shape().elements();
  // NaN passes through, as in torch.relu, so the NaN check still sees it.
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void tanh_fwd(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const int64_t n = a.in[0].shape().elements();
  for (int64_t i = 0; i < n; ++i) y[i] = tanh_approx(x[i]);
}

void silu_fwd(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const int64_t n = a.in[0].shape().elements();
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * sigmoid_approx(x[i]);
}

void relu_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const float* y = a.in[0].f32();
  const float* dy = a.in[1].f32();
  // y > 0 exactly where x > 0, so the output carries the mask (PyTorch's
  // threshold_backward also passes nothing at x == 0).
  store(a.accumulate(0), a.out[0].f32(), a.in[1].shape().elements(),
        [&](int64_t i) { return select(y[i] > 0.0f, dy[i], 0.0f); });
}

void tanh_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const float* y = a.in[0].f32();
  const float* dy = a.in[1].f32();
  store(a.accumulate(0), a.out[0].f32(), a.in[1].shape().elements(),
        [&](int64_t i) { return dy[i] * (1.0f - y[i] * y[i]); });
}

void silu_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  const float* x = a.in[0].f32();
  const float* dy = a.in[1].f32();
  store(a.accumulate(0), a.out[0].f32(), a.in[1].shape().elements(), [&](int64_t i) {
    const float s = sigmoid_approx(x[i]);
    return dy[i] * s * (1.0f + x[i] * (1.0f - s));
  });
}

}  // namespace tr::cpu

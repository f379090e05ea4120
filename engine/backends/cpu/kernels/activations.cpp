// SPDX-License-Identifier: GPL-3.0-or-later
// ReLU and the activation family (ACTIVATION_FWD/BWD: tanh, SiLU, ReLU6,
// LeakyReLU, GELU, sigmoid) on the CPU, compact FP32, by element count.
#include "backends/cpu/kernels/activations.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "backends/cpu/kernels/bf16_arrays.h"
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

// Each activation: y = f(x) and dx = g(s, dy), where s is what the backward
// reads (the output or the input: activation_backward_reads_output), and the
// cost of one element of each.
struct Tanh {
  static float f(float x, float) { return tanh_approx(x); }
  static float df(float y, float g, float) { return g * (1.0f - y * y); }
  static constexpr int64_t kForwardCost = kPolynomialCost, kBackwardCost = 1;
};

struct Silu {
  static float f(float x, float) { return x * sigmoid_approx(x); }
  static float df(float x, float g, float) {
    const float s = sigmoid_approx(x);
    return g * s * (1.0f + x * (1.0f - s));
  }
  static constexpr int64_t kForwardCost = kPolynomialCost, kBackwardCost = kPolynomialCost;
};

struct Relu6 {
  // NaN passes through, as in torch.nn.functional.relu6.
  static float f(float x, float) { return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x); }
  static float df(float y, float g, float) { return select(y > 0.0f && y < 6.0f, g, 0.0f); }
  static constexpr int64_t kForwardCost = 1, kBackwardCost = 1;
};

struct LeakyRelu {
  // With 0 <= slope < 1, y > 0 exactly where x > 0.
  static float f(float x, float slope) { return x > 0.0f ? x : slope * x; }
  static float df(float y, float g, float slope) { return y > 0.0f ? g : slope * g; }
  static constexpr int64_t kForwardCost = 1, kBackwardCost = 1;
};

struct Gelu {
  static constexpr float kRsqrt2Pi = 0.39894228040143268f;
  static float f(float x, float) { return x * normal_cdf_approx(x); }
  static float df(float x, float g, float) {
    return g * (normal_cdf_approx(x) + x * kRsqrt2Pi * exp_approx(-0.5f * x * x));
  }
  static constexpr int64_t kForwardCost = 2 * kPolynomialCost, kBackwardCost = 3 * kPolynomialCost;
};

struct Sigmoid {
  static float f(float x, float) { return sigmoid_approx(x); }
  static float df(float y, float g, float) { return g * y * (1.0f - y); }
  static constexpr int64_t kForwardCost = kPolynomialCost, kBackwardCost = 1;
};

// Compact bfloat16 operands are read and written where they lie, a block of
// values at a time widened on the stack: the staged path's bits (the same
// FP32 function, rounded once) without its chunks' bookkeeping, which cost
// a GELU of vit-tiny-fashion a third of its time (kBf16Block: bf16_arrays.h).

// in [x] out [y], bfloat16
template <class F>
bool forward_bf16(const KernelArgs& a) {
  if (!detail::compact_operands(a, 1, 1, {0}, {0})) return false;
  const auto* x = static_cast<const uint16_t*>(a.in[0].data);
  auto* y = static_cast<uint16_t*>(a.out[0].data);
  const float slope = static_cast<float>(a.params().negative_slope);
  const int64_t n = a.in[0].shape().elements();
  detail::parallel_ranges(
      n, n * F::kForwardCost,
      [&](int64_t lo, int64_t hi) {
        float in[kBf16Block], out[kBf16Block];
        for (int64_t b = lo; b < hi; b += kBf16Block) {
          const int64_t m = std::min(kBf16Block, hi - b);
          widen_bf16(x + b, in, m);
          for (int64_t i = 0; i < m; ++i) out[i] = F::f(in[i], slope);
          narrow_to_bf16(out, y + b, m);
        }
      },
      kBf16Line);
  return true;
}

// in [y or x, dy] out [dx], bfloat16
template <class F>
bool backward_bf16(const KernelArgs& a) {
  if (!detail::compact_operands(a, 2, 1, {0, 1}, {0})) return false;
  const auto* s = static_cast<const uint16_t*>(a.in[0].data);
  const auto* dy = static_cast<const uint16_t*>(a.in[1].data);
  auto* dx = static_cast<uint16_t*>(a.out[0].data);
  const bool acc = a.accumulate(0);
  const float slope = static_cast<float>(a.params().negative_slope);
  const int64_t n = a.in[1].shape().elements();
  detail::parallel_ranges(
      n, n * F::kBackwardCost,
      [&](int64_t lo, int64_t hi) {
        float sv[kBf16Block], gv[kBf16Block], out[kBf16Block];
        for (int64_t b = lo; b < hi; b += kBf16Block) {
          const int64_t m = std::min(kBf16Block, hi - b);
          widen_bf16(s + b, sv, m);
          widen_bf16(dy + b, gv, m);
          if (acc) widen_bf16(dx + b, out, m);
          store(acc, out, m, [&](int64_t i) { return F::df(sv[i], gv[i], slope); });
          narrow_to_bf16(out, dx + b, m);
        }
      },
      kBf16Line);
  return true;
}

// in [x] out [y]
template <class F>
void forward(const KernelArgs& a) {
  if (forward_bf16<F>(a) || detail::run_16bit_elementwise(a, forward<F>)) return;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  const float slope = static_cast<float>(a.params().negative_slope);
  parallel_floats(
      a.in[0].shape().elements(),
      [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = F::f(x[i], slope);
      },
      F::kForwardCost);
}

// in [y or x, dy] out [dx]
template <class F>
void backward(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (backward_bf16<F>(a) || detail::run_16bit_elementwise(a, backward<F>)) return;
  const float* s = a.in[0].f32();
  const float* dy = a.in[1].f32();
  float* dx = a.out[0].f32();
  const bool acc = a.accumulate(0);
  const float slope = static_cast<float>(a.params().negative_slope);
  parallel_floats(
      a.in[1].shape().elements(),
      [&](int64_t lo, int64_t hi) {
        const float* sr = s + lo;
        const float* gr = dy + lo;
        store(acc, dx + lo, hi - lo, [&](int64_t i) { return F::df(sr[i], gr[i], slope); });
      },
      F::kBackwardCost);
}

// Calls body(F{}) with the functor of the node's activation.
template <class Body>
void with_activation(const KernelArgs& a, const char* op, Body body) {
  switch (a.params().activation) {
    case Activation::TANH:
      return body(Tanh{});
    case Activation::SILU:
      return body(Silu{});
    case Activation::RELU6:
      return body(Relu6{});
    case Activation::LEAKY_RELU:
      return body(LeakyRelu{});
    case Activation::GELU:
      return body(Gelu{});
    case Activation::SIGMOID:
      return body(Sigmoid{});
    case Activation::NUM_ACTIVATIONS:
      break;
  }
  throw std::logic_error(std::string(op) + a.where() + " has no activation to run");
}

}  // namespace

void relu_fwd(const KernelArgs& a) {
  if (detail::run_16bit_elementwise(a, relu_fwd)) return;
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  // NaN passes through, as in torch.relu, so the NaN check still sees it.
  parallel_floats(a.in[0].shape().elements(), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = x[i] < 0.0f ? 0.0f : x[i];
  });
}

void relu_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_16bit_elementwise(a, relu_bwd)) return;
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

void activation_fwd(const KernelArgs& a) {
  with_activation(a, "ACTIVATION_FWD", [&](auto f) { forward<decltype(f)>(a); });
}

void activation_bwd(const KernelArgs& a) {
  with_activation(a, "ACTIVATION_BWD", [&](auto f) { backward<decltype(f)>(a); });
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the CPU compute kernels and the op -> kernel table.
//
// Finite-difference checks of every backward against its forward, exact values
// where PyTorch semantics fix them (batch-norm running statistics, pooling
// windows, softmax-CE counts, dropout masks) and the accumulate flag.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/dropout.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/pooling.h"
#include "backends/cpu/kernels/softmax_ce.h"
#include "compile/layer_lowering.h"
#include "kernel_harness.h"

using namespace tr;
using tr::test::gradient_check;
using tr::test::KernelHarness;
using tr::test::layer_with;
using tr::test::square_window;

namespace {

constexpr double kGradTolerance = 2e-2;

GraphNode node_for(int layer, uint8_t accumulate_mask = 0) {
  GraphNode n;
  n.layer = layer;
  n.accumulate_mask = accumulate_mask;
  return n;
}

// Sum of out * probe in double: the scalar loss whose gradient w.r.t. out is probe.
double probe_loss(const float* out, const float* probe, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(out[i]) * probe[i];
  return s;
}

// Finite-difference errors of the BN backward (or of the fused BN+ReLU
// backward) on a small random batch, and whether accumulate(2) adds dx onto
// what is already there.
struct BnGradientErrors {
  double dx = 1, dgamma = 1, dbeta = 1;
  bool accumulates = false;
};

BnGradientErrors bn_gradient_errors(bool fused_relu) {
  std::mt19937 rng(fused_relu ? 5 : 3);
  KernelHarness h;
  const Shape s{2, 3, 3, 5};
  const Shape c{1, 1, 1, 5};
  const size_t x = h.tensor(s), gamma = h.tensor(c), beta = h.tensor(c), pm = h.tensor(c),
               pv = h.tensor(c), y = h.tensor(s), saved = h.tensor({1, 1, 2, 5}), nm = h.tensor(c),
               nv = h.tensor(c), dy = h.tensor(s), dgamma = h.tensor(c), dbeta = h.tensor(c),
               dx = h.tensor(s);
  h.fill_random(x, rng, -2.0f, 3.0f);
  h.fill_random(gamma, rng, 0.5f, 1.5f);
  h.fill_random(beta, rng);
  h.fill_random(dy, rng);
  const LayerNode layer = layer_with(LayerType::BatchNorm2d);
  const auto fwd = fused_relu ? cpu::bn_relu_fwd_train : cpu::bn_fwd_train;
  const auto bwd = fused_relu ? cpu::bn_relu_bwd : cpu::bn_bwd;
  const std::vector<size_t> bwd_in = fused_relu ? std::vector<size_t>{x, gamma, beta, saved, dy}
                                                : std::vector<size_t>{x, gamma, saved, dy};
  GraphNode node = node_for(2);
  const KernelArgs fa = h.args({x, gamma, beta, pm, pv}, {y, saved, nm, nv}, &node, &layer);
  fwd(fa);
  bwd(h.args(bwd_in, {dgamma, dbeta, dx}, &node, &layer));
  auto loss = [&] {
    fwd(fa);
    return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
  };
  // The ReLU's kink lies nearer than 1e-2 to some samples: a smaller step there.
  const double eps = fused_relu ? 1e-3 : 1e-2;
  BnGradientErrors e;
  e.dx = gradient_check(h.f32(x), h.elements(x), h.f32(dx), loss, eps);
  e.dgamma = gradient_check(h.f32(gamma), 5, h.f32(dgamma), loss, eps);
  e.dbeta = gradient_check(h.f32(beta), 5, h.f32(dbeta), loss, eps);

  std::vector<float> first(h.f32(dx), h.f32(dx) + h.elements(dx));
  GraphNode acc = node_for(2, 0b100);
  bwd(h.args(bwd_in, {dgamma, dbeta, dx}, &acc, &layer));
  e.accumulates = true;
  for (int64_t i = 0; i < h.elements(dx); ++i)
    e.accumulates &= std::fabs(h.f32(dx)[i] - 2 * first[static_cast<size_t>(i)]) < 1e-6f;
  return e;
}

// Values k * step (shuffled, centred): distinct by at least `step`, so a
// finite-difference nudge never changes which element of a window is the maximum.
void fill_distinct(float* x, int64_t n, std::mt19937& rng, float step = 0.05f) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < n; ++i)
    x[i] = (static_cast<float>(order[static_cast<size_t>(i)]) - static_cast<float>(n) / 2) * step;
}

// Random values kept away from zero, so ReLU's kink is never straddled.
void fill_away_from_zero(float* x, int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(0.1f, 1.5f);
  std::bernoulli_distribution sign(0.5);
  for (int64_t i = 0; i < n; ++i) x[i] = sign(rng) ? u(rng) : -u(rng);
}

using KernelFn = void (*)(const KernelArgs&);

// Gradient check of a one-input activation whose backward reads `bwd_reads_y` ? y : x.
double activation_check(KernelFn fwd, KernelFn bwd, bool bwd_reads_y,
                        const LayerNode* layer = nullptr) {
  std::mt19937 rng(7);
  KernelHarness h;
  const Shape s{2, 3, 4, 5};
  const size_t x = h.tensor(s), y = h.tensor(s), dy = h.tensor(s), dx = h.tensor(s);
  fill_away_from_zero(h.f32(x), h.elements(x), rng);
  h.fill_random(dy, rng);
  GraphNode node = node_for(1);
  const KernelArgs fa = h.args({x}, {y}, &node, layer);
  const KernelArgs ba = h.args({bwd_reads_y ? y : x, dy}, {dx}, &node, layer);
  fwd(fa);
  bwd(ba);
  return gradient_check(h.f32(x), h.elements(x), h.f32(dx), [&] {
    fwd(fa);
    return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
  });
}

// Every layer type whose forward is ACTIVATION_FWD, with its sub-kind.
std::vector<std::pair<LayerType, Activation>> activation_family() {
  std::vector<std::pair<LayerType, Activation>> out;
  for (LayerType t : kAllLayerTypes)
    if (layer_lowering(t).activation != Activation::NUM_ACTIVATIONS)
      out.push_back({t, layer_lowering(t).activation});
  return out;
}

}  // namespace

class TestCpuKernels : public QObject {
  Q_OBJECT

 private slots:
  // ---- the table ----------------------------------------------------------

  void everyOpHasAKernelExceptTheBackendsOwn() {
    for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
      const ComputeOp op = static_cast<ComputeOp>(i);
      QCOMPARE(cpu::compute_kernel(op) == nullptr, op == ComputeOp::H2D_INPUT);
    }
    for (int i = 0; i < static_cast<int>(RangeOp::NUM_RANGE_OPS); ++i) {
      const RangeOp op = static_cast<RangeOp>(i);
      QCOMPARE(cpu::range_kernel(op) == nullptr, is_collective(op));
    }
    QVERIFY(cpu::range_kernel(RangeOp::ALLREDUCE_MEAN) == nullptr);
    QVERIFY(cpu::range_kernel(RangeOp::ALLREDUCE_SUM) == nullptr);
    QVERIFY(cpu::compute_kernel(ComputeOp::NUM_COMPUTE_OPS) == nullptr);
    QVERIFY(cpu::compute_kernel(ComputeOp::BN_BWD) == &cpu::bn_bwd);
    QVERIFY(cpu::compute_kernel(ComputeOp::SOFTMAX_CE_FWD) == &cpu::softmax_ce_fwd);
  }

  // ---- batch norm ---------------------------------------------------------

  void batchNormTrainingStatisticsAndRunningUpdate() {
    // Two channels, M = 4 values each: channel 0 is 1,2,3,4, channel 1 is 0,0,2,-2.
    KernelHarness h;
    const size_t x = h.tensor({1, 2, 2, 2}), gamma = h.tensor({1, 1, 1, 2}),
                 beta = h.tensor({1, 1, 1, 2}), pm = h.tensor({1, 1, 1, 2}),
                 pv = h.tensor({1, 1, 1, 2}), y = h.tensor({1, 2, 2, 2}),
                 saved = h.tensor({1, 1, 2, 2}), nm = h.tensor({1, 1, 1, 2}),
                 nv = h.tensor({1, 1, 1, 2});
    const float xs[] = {1, 0, 2, 0, 3, 2, 4, -2};
    std::copy(std::begin(xs), std::end(xs), h.f32(x));
    h.f32(gamma)[0] = 2.0f;
    h.f32(gamma)[1] = 0.5f;
    h.f32(beta)[0] = 1.0f;
    h.f32(beta)[1] = -1.0f;
    h.f32(pm)[0] = 0.5f;
    h.f32(pm)[1] = 1.0f;
    h.f32(pv)[0] = 2.0f;
    h.f32(pv)[1] = 1.0f;
    LayerParams params;
    params.eps = 1e-3;
    params.momentum = 0.2;
    const LayerNode layer = layer_with(LayerType::BatchNorm2d, params);
    GraphNode node = node_for(3);
    cpu::bn_fwd_train(h.args({x, gamma, beta, pm, pv}, {y, saved, nm, nv}, &node, &layer));

    // Channel 0: mean 2.5, biased var 1.25, unbiased 5/3. Channel 1: mean 0, var 2, unbiased 8/3.
    const double inv0 = 1.0 / std::sqrt(1.25 + 1e-3), inv1 = 1.0 / std::sqrt(2.0 + 1e-3);
    QVERIFY(std::fabs(h.f32(saved)[0] - 2.5f) < 1e-6f);
    QVERIFY(std::fabs(h.f32(saved)[1] - 0.0f) < 1e-6f);
    QVERIFY(std::fabs(h.f32(saved)[2] - inv0) < 1e-6);
    QVERIFY(std::fabs(h.f32(saved)[3] - inv1) < 1e-6);
    QVERIFY(std::fabs(h.f32(nm)[0] - (0.8 * 0.5 + 0.2 * 2.5)) < 1e-6);
    QVERIFY(std::fabs(h.f32(nm)[1] - (0.8 * 1.0 + 0.2 * 0.0)) < 1e-6);
    QVERIFY(std::fabs(h.f32(nv)[0] - (0.8 * 2.0 + 0.2 * 5.0 / 3.0)) < 1e-6);
    QVERIFY(std::fabs(h.f32(nv)[1] - (0.8 * 1.0 + 0.2 * 8.0 / 3.0)) < 1e-6);
    for (int m = 0; m < 4; ++m) {
      const double y0 = 2.0 * (xs[2 * m] - 2.5) * inv0 + 1.0;
      const double y1 = 0.5 * (xs[2 * m + 1] - 0.0) * inv1 - 1.0;
      QVERIFY(std::fabs(h.f32(y)[2 * m] - y0) < 1e-5);
      QVERIFY(std::fabs(h.f32(y)[2 * m + 1] - y1) < 1e-5);
    }
  }

  void batchNormManyChannelsMatchesReference() {
    // 300 channels cross the kernel's channel block; compare with a naive double loop.
    std::mt19937 rng(11);
    KernelHarness h;
    const Shape s{3, 2, 1, 300};
    const Shape c{1, 1, 1, 300};
    const size_t x = h.tensor(s), gamma = h.tensor(c), beta = h.tensor(c), pm = h.tensor(c),
                 pv = h.tensor(c), y = h.tensor(s), saved = h.tensor({1, 1, 2, 300}),
                 nm = h.tensor(c), nv = h.tensor(c);
    h.fill_random(x, rng, -3.0f, 5.0f);
    h.fill_random(gamma, rng);
    h.fill_random(beta, rng);
    const LayerNode layer = layer_with(LayerType::BatchNorm2d);
    cpu::bn_fwd_train(h.args({x, gamma, beta, pm, pv}, {y, saved, nm, nv}, nullptr, &layer));
    const int64_t M = 6;
    for (int64_t ch = 0; ch < 300; ++ch) {
      double mean = 0, var = 0;
      for (int64_t m = 0; m < M; ++m) mean += h.f32(x)[m * 300 + ch];
      mean /= M;
      for (int64_t m = 0; m < M; ++m) var += std::pow(h.f32(x)[m * 300 + ch] - mean, 2);
      var /= M;
      const double inv = 1.0 / std::sqrt(var + 1e-5);
      QVERIFY(std::fabs(h.f32(saved)[ch] - mean) < 1e-5);
      QVERIFY(std::fabs(h.f32(saved)[300 + ch] - inv) < 1e-4 * inv);
      QVERIFY(std::fabs(h.f32(nv)[ch] - 0.1 * var * M / (M - 1)) < 1e-5);
      for (int64_t m = 0; m < M; ++m) {
        const double ref =
            h.f32(gamma)[ch] * (h.f32(x)[m * 300 + ch] - mean) * inv + h.f32(beta)[ch];
        QVERIFY(std::fabs(h.f32(y)[m * 300 + ch] - ref) < 1e-4);
      }
    }
  }

  void batchNormBackwardMatchesFiniteDifferences() {
    const BnGradientErrors e = bn_gradient_errors(false);
    QVERIFY2(e.dx < kGradTolerance, "dx");
    QVERIFY2(e.dgamma < kGradTolerance, "dgamma");
    QVERIFY2(e.dbeta < kGradTolerance, "dbeta");
    QVERIFY2(e.accumulates, "accumulate(2): dx adds onto what another consumer wrote");
  }

  void batchNormInferenceUsesEquivalentScaleAndBias() {
    KernelHarness h;
    const size_t x = h.tensor({2, 1, 1, 3}), sc = h.tensor({1, 1, 1, 3}),
                 bi = h.tensor({1, 1, 1, 3}), y = h.tensor({2, 1, 1, 3});
    for (int i = 0; i < 6; ++i) h.f32(x)[i] = static_cast<float>(i);
    for (int i = 0; i < 3; ++i) {
      h.f32(sc)[i] = static_cast<float>(i + 1);
      h.f32(bi)[i] = -static_cast<float>(i);
    }
    cpu::bn_fwd_infer(h.args({x, sc, bi}, {y}));
    for (int i = 0; i < 6; ++i)
      QCOMPARE(h.f32(y)[i],
               static_cast<float>(i) * static_cast<float>(i % 3 + 1) - static_cast<float>(i % 3));
  }

  void fusedBnReluMatchesBnThenRelu() {
    // Shapes on both sides of the channel block (256) and of the 4-row unroll.
    for (const Shape s : {Shape{2, 3, 3, 5}, Shape{3, 5, 7, 300}}) {
      std::mt19937 rng(11);
      KernelHarness h;
      const Shape c{1, 1, 1, s.c};
      const size_t x = h.tensor(s), gamma = h.tensor(c), beta = h.tensor(c), pm = h.tensor(c),
                   pv = h.tensor(c), y = h.tensor(s), r = h.tensor(s), fused = h.tensor(s),
                   saved = h.tensor({1, 1, 2, s.c}), saved2 = h.tensor({1, 1, 2, s.c}),
                   nm = h.tensor(c), nv = h.tensor(c), nm2 = h.tensor(c), nv2 = h.tensor(c),
                   dy = h.tensor(s), dr = h.tensor(s), dg = h.tensor(c), db = h.tensor(c),
                   dx = h.tensor(s), dg2 = h.tensor(c), db2 = h.tensor(c), dx2 = h.tensor(s);
      h.fill_random(x, rng, -2.0f, 3.0f);
      h.fill_random(gamma, rng, 0.5f, 1.5f);
      h.fill_random(beta, rng);
      h.fill_random(pv, rng, 0.5f, 1.0f);
      h.fill_random(dy, rng);
      const LayerNode layer = layer_with(LayerType::BatchNorm2d);
      GraphNode node = node_for(4);
      cpu::bn_fwd_train(h.args({x, gamma, beta, pm, pv}, {y, saved, nm, nv}, &node, &layer));
      cpu::relu_fwd(h.args({y}, {r}));
      cpu::bn_relu_fwd_train(
          h.args({x, gamma, beta, pm, pv}, {fused, saved2, nm2, nv2}, &node, &layer));
      // Same statistics, and the ReLU of the same BN output, bit for bit.
      for (int64_t i = 0; i < h.elements(r); ++i) QCOMPARE(h.f32(fused)[i], h.f32(r)[i]);
      for (int64_t i = 0; i < 2 * s.c; ++i) QCOMPARE(h.f32(saved2)[i], h.f32(saved)[i]);
      for (int64_t i = 0; i < s.c; ++i) {
        QCOMPARE(h.f32(nm2)[i], h.f32(nm)[i]);
        QCOMPARE(h.f32(nv2)[i], h.f32(nv)[i]);
      }
      // Backward: ReLU then BN against the fused kernel, which never sees y.
      GraphNode bwd = node_for(3);
      cpu::relu_bwd(h.args({y, dy}, {dr}, &bwd));
      cpu::bn_bwd(h.args({x, gamma, saved, dr}, {dg, db, dx}, &bwd, &layer));
      cpu::bn_relu_bwd(h.args({x, gamma, beta, saved, dy}, {dg2, db2, dx2}, &bwd, &layer));
      auto close = [](float a, float b) { return std::fabs(a - b) <= 1e-5f * (1 + std::fabs(a)); };
      for (int64_t i = 0; i < h.elements(dx); ++i)
        QVERIFY2(close(h.f32(dx2)[i], h.f32(dx)[i]), std::to_string(i).c_str());
      for (int64_t i = 0; i < s.c; ++i) {
        QVERIFY(close(h.f32(dg2)[i], h.f32(dg)[i]));
        QVERIFY(close(h.f32(db2)[i], h.f32(db)[i]));
      }
    }
  }

  void fusedBnReluBackwardMatchesFiniteDifferences() {
    const BnGradientErrors e = bn_gradient_errors(true);
    QVERIFY2(e.dx < kGradTolerance, "dx");
    QVERIFY2(e.dgamma < kGradTolerance, "dgamma");
    QVERIFY2(e.dbeta < kGradTolerance, "dbeta");
    QVERIFY2(e.accumulates, "accumulate(2)");
  }

  void fusedBnReluInference() {
    KernelHarness h;
    const size_t x = h.tensor({2, 1, 1, 3}), sc = h.tensor({1, 1, 1, 3}),
                 bi = h.tensor({1, 1, 1, 3}), y = h.tensor({2, 1, 1, 3});
    for (int i = 0; i < 6; ++i) h.f32(x)[i] = static_cast<float>(i);
    for (int i = 0; i < 3; ++i) {
      h.f32(sc)[i] = static_cast<float>(i + 1);
      h.f32(bi)[i] = -3.0f * static_cast<float>(i);
    }
    cpu::bn_relu_fwd_infer(h.args({x, sc, bi}, {y}));
    for (int i = 0; i < 6; ++i)
      QCOMPARE(h.f32(y)[i], std::max(0.0f, static_cast<float>(i) * static_cast<float>(i % 3 + 1) -
                                               3.0f * static_cast<float>(i % 3)));
  }

  // ---- activations --------------------------------------------------------

  void activationBackwardsMatchFiniteDifferences() {
    QVERIFY2(activation_check(cpu::relu_fwd, cpu::relu_bwd, true) < kGradTolerance, "relu");
    for (auto [type, f] : activation_family()) {
      LayerParams p;
      p.negative_slope = 0.2;
      const LayerNode layer = layer_with(type, p);
      QVERIFY2(activation_check(cpu::activation_fwd, cpu::activation_bwd,
                                activation_backward_reads_output(f), &layer) < kGradTolerance,
               layer_type_name(type).data());
    }
  }

  void activationFamilyPassesNanAndNeedsItsSubKind() {
    // (Each one's values against a double reference: engine.backend_ops.)
    QVERIFY(activation_family().size() >= 6);  // Tanh, SiLU, ReLU6, LeakyReLU, GELU, Sigmoid
    for (auto [type, f] : activation_family()) {
      LayerParams p;
      p.negative_slope = 0.2;
      const LayerNode layer = layer_with(type, p);
      KernelHarness h;
      const size_t x = h.tensor({1, 1, 1, 4}), y = h.tensor({1, 1, 1, 4});
      h.f32(x)[0] = std::numeric_limits<float>::quiet_NaN();
      cpu::activation_fwd(h.args({x}, {y}, nullptr, &layer));
      QVERIFY2(std::isnan(h.f32(y)[0]), layer_type_name(type).data());  // the NaN check sees it
    }
    // The sub-kind is what the compiler resolved: without one there is no kernel to run.
    KernelHarness h;
    const size_t x = h.tensor({1, 1, 1, 4}), y = h.tensor({1, 1, 1, 4});
    const LayerNode relu = layer_with(LayerType::ReLU);
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             cpu::activation_fwd(h.args({x}, {y}, nullptr, &relu)));
  }

  void fastMathIsWithinAFewUlpOfLibm() {
    // The vectorisable exp/tanh/sigmoid behind the activations, against double libm.
    double worst_exp = 0, worst_tanh = 0, worst_sigmoid = 0;
    for (double v = -87.0; v <= 88.0; v += 1e-3) {
      const float f = static_cast<float>(v);
      const double r = std::exp(static_cast<double>(f));
      worst_exp = std::max(worst_exp, std::fabs(cpu::exp_approx(f) - r) / r);
    }
    for (double v = -20.0; v <= 20.0; v += 1e-4) {
      const float f = static_cast<float>(v);
      const double t = std::tanh(static_cast<double>(f));
      if (t != 0.0)
        worst_tanh = std::max(worst_tanh, std::fabs(cpu::tanh_approx(f) - t) / std::fabs(t));
      const double s = 1.0 / (1.0 + std::exp(-static_cast<double>(f)));
      worst_sigmoid = std::max(worst_sigmoid, std::fabs(cpu::sigmoid_approx(f) - s) / s);
    }
    for (float f = 1e-30f; f < 1.0f; f *= 1.07f) {  // tiny arguments keep full relative accuracy
      const double t = std::tanh(static_cast<double>(f));
      worst_tanh = std::max(worst_tanh, std::fabs(cpu::tanh_approx(f) - t) / t);
    }
    QVERIFY2(worst_exp < 2e-7, qPrintable(QString::number(worst_exp)));
    QVERIFY2(worst_tanh < 3e-7, qPrintable(QString::number(worst_tanh)));
    QVERIFY2(worst_sigmoid < 3e-7, qPrintable(QString::number(worst_sigmoid)));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    QVERIFY(std::isnan(cpu::exp_approx(nan)));
    QVERIFY(std::isnan(cpu::tanh_approx(nan)));
    QCOMPARE(cpu::tanh_approx(inf), 1.0f);
    QCOMPARE(cpu::tanh_approx(-100.0f), -1.0f);
    QCOMPARE(cpu::tanh_approx(-0.0f), -0.0f);
    QVERIFY(std::signbit(cpu::tanh_approx(-0.0f)));
    QCOMPARE(cpu::sigmoid_approx(200.0f), 1.0f);
    QVERIFY(cpu::sigmoid_approx(-200.0f) >= 0.0f && cpu::sigmoid_approx(-200.0f) < 1e-37f);
  }

  void activationValues() {
    KernelHarness h;
    const size_t x = h.tensor({1, 1, 1, 4}), y = h.tensor({1, 1, 1, 4});
    const float xs[] = {-2.0f, -0.0f, 0.5f, 3.0f};
    std::copy(std::begin(xs), std::end(xs), h.f32(x));
    cpu::relu_fwd(h.args({x}, {y}));
    QCOMPARE(h.f32(y)[0], 0.0f);
    QCOMPARE(h.f32(y)[2], 0.5f);
  }

  void activationBackwardHonoursAccumulate() {
    KernelHarness h;
    const size_t y = h.tensor({1, 1, 1, 4}), dy = h.tensor({1, 1, 1, 4}),
                 dx = h.tensor({1, 1, 1, 4});
    const float ys[] = {0.0f, 1.0f, 2.0f, 0.0f};
    std::copy(std::begin(ys), std::end(ys), h.f32(y));
    for (int i = 0; i < 4; ++i) {
      h.f32(dy)[i] = 10.0f;
      h.f32(dx)[i] = 1.0f;
    }
    GraphNode acc = node_for(1, 0b1);
    cpu::relu_bwd(h.args({y, dy}, {dx}, &acc));
    const float want[] = {1.0f, 11.0f, 11.0f, 1.0f};
    for (int i = 0; i < 4; ++i) QCOMPARE(h.f32(dx)[i], want[i]);
    GraphNode over = node_for(1, 0);
    cpu::relu_bwd(h.args({y, dy}, {dx}, &over));
    const float fresh[] = {0.0f, 10.0f, 10.0f, 0.0f};
    for (int i = 0; i < 4; ++i) QCOMPARE(h.f32(dx)[i], fresh[i]);
  }

  // ---- pooling ------------------------------------------------------------

  void maxPoolForwardPadsWithMinusInfinity() {
    // All-negative input: a zero from padding would win, -inf padding does not.
    KernelHarness h;
    const size_t x = h.tensor({1, 3, 3, 1}), y = h.tensor({1, 2, 2, 1});
    for (int i = 0; i < 9; ++i) h.f32(x)[i] = -1.0f - static_cast<float>(i);
    const LayerNode layer = layer_with(LayerType::MaxPool2d, square_window(2, 2, 1));
    cpu::maxpool_fwd(h.args({x}, {y}, nullptr, &layer));
    // Windows (rows x cols): {0}x{0}, {0}x{1,2}, {1,2}x{0}, {1,2}x{1,2}.
    QCOMPARE(h.f32(y)[0], -1.0f);
    QCOMPARE(h.f32(y)[1], -2.0f);
    QCOMPARE(h.f32(y)[2], -4.0f);
    QCOMPARE(h.f32(y)[3], -5.0f);
  }

  void maxPoolBackwardRoutesToFirstMaximum() {
    // Ties: the first maximum in row-major order gets the gradient, and
    // overlapping windows that pick the same element add up.
    KernelHarness h;
    const size_t x = h.tensor({1, 1, 3, 1}), y = h.tensor({1, 1, 2, 1}),
                 dy = h.tensor({1, 1, 2, 1}), dx = h.tensor({1, 1, 3, 1});
    const float xs[] = {1.0f, 5.0f, 5.0f};
    std::copy(std::begin(xs), std::end(xs), h.f32(x));
    LayerParams p = square_window(1, 1, 0);
    p.kernel_w = 2;
    const LayerNode layer = layer_with(LayerType::MaxPool2d, p);
    cpu::maxpool_fwd(h.args({x}, {y}, nullptr, &layer));
    QCOMPARE(h.f32(y)[0], 5.0f);
    QCOMPARE(h.f32(y)[1], 5.0f);
    h.f32(dy)[0] = 1.0f;
    h.f32(dy)[1] = 2.0f;
    h.f32(dx)[0] = 100.0f;  // stale: must be overwritten
    cpu::maxpool_bwd(h.args({x, y, dy}, {dx}, nullptr, &layer));
    QCOMPARE(h.f32(dx)[0], 0.0f);
    QCOMPARE(h.f32(dx)[1], 3.0f);
    QCOMPARE(h.f32(dx)[2], 0.0f);

    // A 2x2 window of equal values: only the top-left one.
    KernelHarness t;
    const size_t x2 = t.tensor({1, 2, 2, 1}), y2 = t.tensor({1, 1, 1, 1}),
                 dy2 = t.tensor({1, 1, 1, 1}), dx2 = t.tensor({1, 2, 2, 1});
    for (int i = 0; i < 4; ++i) t.f32(x2)[i] = 7.0f;
    t.f32(dy2)[0] = 1.0f;
    const LayerNode l2 = layer_with(LayerType::MaxPool2d, square_window(2, 2, 0));
    cpu::maxpool_fwd(t.args({x2}, {y2}, nullptr, &l2));
    cpu::maxpool_bwd(t.args({x2, y2, dy2}, {dx2}, nullptr, &l2));
    const float want[] = {1.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 4; ++i) QCOMPARE(t.f32(dx2)[i], want[i]);
  }

  void maxPoolBackwardMatchesFiniteDifferences() {
    // 3x3 windows, stride 2, padding 1: overlapping windows and padded borders.
    std::mt19937 rng(5);
    KernelHarness h;
    const Shape xs{2, 7, 7, 3}, ys{2, 4, 4, 3};
    const size_t x = h.tensor(xs), y = h.tensor(ys), dy = h.tensor(ys), dx = h.tensor(xs);
    fill_distinct(h.f32(x), h.elements(x), rng);
    h.fill_random(dy, rng);
    const LayerNode layer = layer_with(LayerType::MaxPool2d, square_window(3, 2, 1));
    const KernelArgs fa = h.args({x}, {y}, nullptr, &layer);
    cpu::maxpool_fwd(fa);
    cpu::maxpool_bwd(h.args({x, y, dy}, {dx}, nullptr, &layer));
    const double err = gradient_check(
        h.f32(x), h.elements(x), h.f32(dx),
        [&] {
          cpu::maxpool_fwd(fa);
          return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
        },
        1e-2, 1000);
    QVERIFY2(err < kGradTolerance, qPrintable(QString::number(err)));

    // accumulate(0): the windows add onto the existing gradient instead of clearing it.
    std::vector<float> first(h.f32(dx), h.f32(dx) + h.elements(dx));
    GraphNode acc = node_for(1, 0b1);
    cpu::maxpool_bwd(h.args({x, y, dy}, {dx}, &acc, &layer));
    for (int64_t i = 0; i < h.elements(dx); ++i)
      QCOMPARE(h.f32(dx)[i], 2 * first[static_cast<size_t>(i)]);
  }

  void avgPoolCountsPaddingLikePyTorch() {
    // x = 1..9 on 3x3, kernel 2, stride 1, padding 1: every window divides by 4.
    KernelHarness h;
    const size_t x = h.tensor({1, 3, 3, 1}), y = h.tensor({1, 4, 4, 1});
    for (int i = 0; i < 9; ++i) h.f32(x)[i] = static_cast<float>(i + 1);
    const LayerNode layer = layer_with(LayerType::AvgPool2d, square_window(2, 1, 1));
    cpu::avgpool_fwd(h.args({x}, {y}, nullptr, &layer));
    QCOMPARE(h.f32(y)[0], 0.25f);         // {1} / 4
    QCOMPARE(h.f32(y)[1], 0.75f);         // {1,2} / 4
    QCOMPARE(h.f32(y)[5], 3.0f);          // {1,2,4,5} / 4
    QCOMPARE(h.f32(y)[15], 9.0f / 4.0f);  // {9} / 4
    QCOMPARE(h.f32(y)[6], (2 + 3 + 5 + 6) / 4.0f);
  }

  void avgPoolBackwardMatchesFiniteDifferences() {
    std::mt19937 rng(9);
    KernelHarness h;
    const Shape xs{2, 6, 6, 3}, ys{2, 3, 3, 3};
    const size_t x = h.tensor(xs), y = h.tensor(ys), dy = h.tensor(ys), dx = h.tensor(xs);
    h.fill_random(x, rng);
    h.fill_random(dy, rng);
    const LayerNode layer = layer_with(LayerType::AvgPool2d, square_window(3, 2, 1));
    const KernelArgs fa = h.args({x}, {y}, nullptr, &layer);
    cpu::avgpool_fwd(fa);
    GraphNode node = node_for(1);
    cpu::avgpool_bwd(h.args({dy}, {dx}, &node, &layer));
    const double err = gradient_check(
        h.f32(x), h.elements(x), h.f32(dx),
        [&] {
          cpu::avgpool_fwd(fa);
          return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
        },
        1e-2, 1000);
    QVERIFY2(err < kGradTolerance, qPrintable(QString::number(err)));
    std::vector<float> first(h.f32(dx), h.f32(dx) + h.elements(dx));
    GraphNode acc = node_for(1, 0b1);
    cpu::avgpool_bwd(h.args({dy}, {dx}, &acc, &layer));
    for (int64_t i = 0; i < h.elements(dx); ++i)
      QVERIFY(std::fabs(h.f32(dx)[i] - 2 * first[static_cast<size_t>(i)]) < 1e-6f);
  }

  void globalAvgPoolForwardAndBackward() {
    std::mt19937 rng(13);
    KernelHarness h;
    const Shape xs{2, 3, 4, 5}, ys{2, 1, 1, 5};
    const size_t x = h.tensor(xs), y = h.tensor(ys), dy = h.tensor(ys), dx = h.tensor(xs);
    h.fill_random(x, rng);
    h.fill_random(dy, rng);
    const KernelArgs fa = h.args({x}, {y});
    cpu::gap_fwd(fa);
    double mean = 0;
    for (int p = 0; p < 12; ++p) mean += h.f32(x)[(12 + p) * 5 + 4];
    QVERIFY(std::fabs(h.f32(y)[5 + 4] - mean / 12) < 1e-6);
    cpu::gap_bwd(h.args({dy}, {dx}));
    QVERIFY(gradient_check(h.f32(x), h.elements(x), h.f32(dx), [&] {
              cpu::gap_fwd(fa);
              return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
            }) < kGradTolerance);
    GraphNode acc = node_for(1, 0b1);
    const float before = h.f32(dx)[7];
    cpu::gap_bwd(h.args({dy}, {dx}, &acc));
    QCOMPARE(h.f32(dx)[7], 2 * before);
  }

  // ---- dropout ------------------------------------------------------------

  void dropoutKeepsOneMinusPAndScales() {
    // 100k elements with C = 5: the int8 mask has its channels padded to 8.
    KernelHarness h;
    const Shape s{10, 50, 40, 5};
    const size_t x = h.tensor(s), y = h.tensor(s), mask = h.tensor(s, DType::INT8);
    std::mt19937 rng(17);
    h.fill_random(x, rng);
    LayerParams p;
    p.p = 0.3;
    const LayerNode layer = layer_with(LayerType::Dropout, p);
    GraphNode node = node_for(4);
    KernelArgs a = h.args({x}, {y, mask}, &node, &layer);
    a.seed = 1234;
    h.scalars()[static_cast<int>(ScalarSlot::STEP)] = 17;
    cpu::dropout_fwd(a);
    QCOMPARE(a.out[1].desc->padded_c(), int64_t{8});
    int64_t kept = 0;
    const int64_t rows = s.n * s.h * s.w;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 8; ++c) {
        const int8_t m = h.i8(mask)[r * 8 + c];
        if (c >= 5) {
          QCOMPARE(m, int8_t{0});  // padding untouched
          continue;
        }
        QVERIFY(m == 0 || m == 1);
        kept += m;
        const int64_t i = r * 5 + c;
        QCOMPARE(h.f32(y)[i], m ? h.f32(x)[i] * static_cast<float>(1.0 / 0.7) : 0.0f);
        QCOMPARE(m == 1, cpu::dropout_keeps(1234, 17, 4, static_cast<uint64_t>(i), 0.3));
      }
    const double rate = static_cast<double>(kept) / static_cast<double>(s.elements());
    // Four standard deviations of a binomial(100000, 0.7) proportion.
    QVERIFY2(std::fabs(rate - 0.7) < 4 * std::sqrt(0.3 * 0.7 / 1e5),
             qPrintable(QString::number(rate)));
  }

  void dropoutMaskIsDeterministic() {
    KernelHarness h;
    const Shape s{4, 8, 8, 3};
    const size_t x = h.tensor(s), y = h.tensor(s), m1 = h.tensor(s, DType::INT8),
                 m2 = h.tensor(s, DType::INT8);
    LayerParams p;
    p.p = 0.5;
    const LayerNode layer = layer_with(LayerType::Dropout, p);
    GraphNode node = node_for(6);
    const int64_t bytes = s.n * s.h * s.w * 8;
    auto run = [&](size_t mask, uint64_t seed, float step, int layer_index, int rank) {
      GraphNode n = node;
      n.layer = layer_index;
      KernelArgs a = h.args({x}, {y, mask}, &n, &layer);
      a.seed = seed;
      a.rank = rank;
      h.scalars()[static_cast<int>(ScalarSlot::STEP)] = step;
      cpu::dropout_fwd(a);
    };
    auto differing = [&] {
      int64_t d = 0;
      for (int64_t i = 0; i < bytes; ++i) d += h.i8(m1)[i] != h.i8(m2)[i] ? 1 : 0;
      return d;
    };
    run(m1, 42, 3, 6, 0);
    run(m2, 42, 3, 6, 0);
    QCOMPARE(differing(), int64_t{0});
    // Another thread draws the same mask: no hidden RNG state.
    std::thread other([&] { run(m2, 42, 3, 6, 0); });
    other.join();
    QCOMPARE(differing(), int64_t{0});
    // Step, layer, seed and rank each change it (about half of the bits at p = 0.5).
    const int64_t n = s.elements();
    run(m2, 42, 4, 6, 0);
    QVERIFY(differing() > n / 4);
    run(m2, 42, 3, 7, 0);
    QVERIFY(differing() > n / 4);
    run(m2, 43, 3, 6, 0);
    QVERIFY(differing() > n / 4);
    run(m2, 42, 3, 6, 1);
    QVERIFY(differing() > n / 4);
  }

  void dropoutMaskDoesNotDependOnWorldSize() {
    // One rank with batch 4 draws what two ranks with batch 2 draw together.
    KernelHarness h;
    const size_t x4 = h.tensor({4, 2, 2, 3}), y4 = h.tensor({4, 2, 2, 3}),
                 m4 = h.tensor({4, 2, 2, 3}, DType::INT8), x2 = h.tensor({2, 2, 2, 3}),
                 y2 = h.tensor({2, 2, 2, 3}), m2 = h.tensor({2, 2, 2, 3}, DType::INT8);
    const LayerNode layer = layer_with(LayerType::Dropout);
    GraphNode node = node_for(2);
    KernelArgs a = h.args({x4}, {y4, m4}, &node, &layer);
    a.seed = 9;
    cpu::dropout_fwd(a);
    for (int rank = 0; rank < 2; ++rank) {
      KernelArgs b = h.args({x2}, {y2, m2}, &node, &layer);
      b.seed = 9;
      b.rank = rank;
      b.world = 2;
      cpu::dropout_fwd(b);
      for (int64_t i = 0; i < 2 * 2 * 2 * 8; ++i)
        QCOMPARE(h.i8(m2)[i], h.i8(m4)[rank * 2 * 2 * 2 * 8 + i]);
    }
  }

  void dropoutBackwardMatchesFiniteDifferences() {
    // The mask is a function of (seed, step, layer, index), not of x: the
    // forward can be re-run for finite differences and keeps its mask.
    std::mt19937 rng(19);
    KernelHarness h;
    const Shape s{2, 3, 3, 6};
    const size_t x = h.tensor(s), y = h.tensor(s), mask = h.tensor(s, DType::INT8),
                 dy = h.tensor(s), dx = h.tensor(s);
    h.fill_random(x, rng);
    h.fill_random(dy, rng);
    LayerParams p;
    p.p = 0.25;
    const LayerNode layer = layer_with(LayerType::Dropout, p);
    GraphNode node = node_for(5);
    KernelArgs fa = h.args({x}, {y, mask}, &node, &layer);
    fa.seed = 77;
    cpu::dropout_fwd(fa);
    cpu::dropout_bwd(h.args({mask, dy}, {dx}, &node, &layer));
    QVERIFY(gradient_check(h.f32(x), h.elements(x), h.f32(dx), [&] {
              cpu::dropout_fwd(fa);
              return probe_loss(h.f32(y), h.f32(dy), h.elements(y));
            }) < kGradTolerance);
    std::vector<float> first(h.f32(dx), h.f32(dx) + h.elements(dx));
    GraphNode acc = node_for(5, 0b1);
    cpu::dropout_bwd(h.args({mask, dy}, {dx}, &acc, &layer));
    for (int64_t i = 0; i < h.elements(dx); ++i)
      QCOMPARE(h.f32(dx)[i], 2 * first[static_cast<size_t>(i)]);
  }

  // ---- add, flatten, identity, labels ------------------------------------

  void addForwardAndBackwardWithAccumulate() {
    KernelHarness h;
    const Shape s{1, 2, 1, 2};
    const size_t a = h.tensor(s), b = h.tensor(s), y = h.tensor(s), dy = h.tensor(s),
                 da = h.tensor(s), db = h.tensor(s);
    for (int i = 0; i < 4; ++i) {
      h.f32(a)[i] = static_cast<float>(i);
      h.f32(b)[i] = 10.0f * static_cast<float>(i);
      h.f32(dy)[i] = static_cast<float>(i + 1);
      h.f32(da)[i] = 100.0f;
      h.f32(db)[i] = 100.0f;
    }
    cpu::add_fwd(h.args({a, b}, {y}));
    for (int i = 0; i < 4; ++i) QCOMPARE(h.f32(y)[i], 11.0f * static_cast<float>(i));
    QVERIFY(gradient_check(h.f32(a), 4, h.f32(dy), [&] {
              cpu::add_fwd(h.args({a, b}, {y}));
              return probe_loss(h.f32(y), h.f32(dy), 4);
            }) < kGradTolerance);

    // da overwritten, db accumulated.
    GraphNode n1 = node_for(1, 0b10);
    cpu::add_bwd(h.args({dy}, {da, db}, &n1));
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(h.f32(da)[i], static_cast<float>(i + 1));
      QCOMPARE(h.f32(db)[i], 100.0f + static_cast<float>(i + 1));
    }
    // Both ports read one source: the same slot twice, the second accumulates.
    GraphNode n2 = node_for(1, 0b10);
    cpu::add_bwd(h.args({dy}, {da, da}, &n2));
    for (int i = 0; i < 4; ++i) QCOMPARE(h.f32(da)[i], 2.0f * static_cast<float>(i + 1));
    // ... and when a third consumer wrote it earlier, both accumulate.
    GraphNode n3 = node_for(1, 0b11);
    cpu::add_bwd(h.args({dy}, {da, da}, &n3));
    for (int i = 0; i < 4; ++i) QCOMPARE(h.f32(da)[i], 4.0f * static_cast<float>(i + 1));
  }

  void concatJoinsAndSplitsChannels() {
    KernelHarness h;
    const Shape s0{2, 2, 1, 3}, s1{2, 2, 1, 2}, s{2, 2, 1, 5};
    const size_t x0 = h.tensor(s0), x1 = h.tensor(s1), y = h.tensor(s), dy = h.tensor(s),
                 d0 = h.tensor(s0), d1 = h.tensor(s1);
    for (int i = 0; i < 12; ++i) h.f32(x0)[i] = static_cast<float>(i);
    for (int i = 0; i < 8; ++i) h.f32(x1)[i] = 100.0f + static_cast<float>(i);
    for (int i = 0; i < 20; ++i) h.f32(dy)[i] = static_cast<float>(i + 1);
    cpu::concat_fwd(h.args({x0, x1}, {y}));
    // Per position: x0's 3 channels, then x1's 2.
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 5; ++k)
        QCOMPARE(h.f32(y)[r * 5 + k], k < 3 ? static_cast<float>(r * 3 + k)
                                            : 100.0f + static_cast<float>(r * 2 + k - 3));
    // dx0 overwritten, dx1 accumulated onto 10.
    for (int i = 0; i < 8; ++i) h.f32(d1)[i] = 10.0f;
    GraphNode n1 = node_for(1, 0b10);
    cpu::concat_bwd(h.args({dy}, {d0, d1}, &n1));
    for (int r = 0; r < 4; ++r) {
      for (int k = 0; k < 3; ++k) QCOMPARE(h.f32(d0)[r * 3 + k], static_cast<float>(r * 5 + k + 1));
      for (int k = 0; k < 2; ++k)
        QCOMPARE(h.f32(d1)[r * 2 + k], 10.0f + static_cast<float>(r * 5 + 3 + k + 1));
    }
    // An absent gradient is skipped; the other still gets its slice.
    GraphNode n2 = node_for(1);
    KernelArgs a = h.args({dy}, {d0, d1}, &n2);
    a.out[0] = {};
    cpu::concat_bwd(a);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 2; ++k)
        QCOMPARE(h.f32(d1)[r * 2 + k], static_cast<float>(r * 5 + 3 + k + 1));
    // x concatenated with itself (3 + 3 channels): both slices into one slot, the
    // second adding onto the first.
    KernelHarness g;
    const size_t dy6 = g.tensor({1, 1, 2, 6}), d3 = g.tensor({1, 1, 2, 3});
    for (int i = 0; i < 12; ++i) g.f32(dy6)[i] = static_cast<float>(i);
    GraphNode n3 = node_for(1, 0b10);
    cpu::concat_bwd(g.args({dy6}, {d3, d3}, &n3));
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 3; ++k)
        QCOMPARE(g.f32(d3)[r * 3 + k], static_cast<float>(r * 6 + k + r * 6 + 3 + k));
  }

  void flattenIdentityAndLabelsCopy() {
    KernelHarness h;
    const size_t x = h.tensor({2, 2, 2, 3}), y = h.tensor({2, 1, 1, 12}),
                 dx = h.tensor({2, 2, 2, 3}), l = h.tensor({5, 1, 1, 1}, DType::INT32),
                 al = h.tensor({5, 1, 1, 1}, DType::INT32);
    for (int i = 0; i < 24; ++i) h.f32(x)[i] = static_cast<float>(i) * 0.5f;
    cpu::flatten_fwd(h.args({x}, {y}));
    for (int i = 0; i < 24; ++i) QCOMPARE(h.f32(y)[i], static_cast<float>(i) * 0.5f);
    cpu::flatten_bwd(h.args({y}, {dx}));
    for (int i = 0; i < 24; ++i) QCOMPARE(h.f32(dx)[i], h.f32(x)[i]);
    GraphNode acc = node_for(1, 0b1);
    cpu::flatten_bwd(h.args({y}, {dx}, &acc));
    for (int i = 0; i < 24; ++i) QCOMPARE(h.f32(dx)[i], static_cast<float>(i));
    cpu::identity(h.args({x}, {dx}));
    for (int i = 0; i < 24; ++i) QCOMPARE(h.f32(dx)[i], h.f32(x)[i]);
    for (int i = 0; i < 5; ++i) h.i32(l)[i] = 3 * i - 1;
    cpu::copy_labels(h.args({l}, {al}));
    for (int i = 0; i < 5; ++i) QCOMPARE(h.i32(al)[i], 3 * i - 1);
  }

  // ---- softmax cross-entropy ---------------------------------------------

  void softmaxCrossEntropyCountsWithTiesAndTop5() {
    KernelHarness h;
    const int64_t N = 6, K = 6;
    const size_t logits = h.tensor({N, 1, 1, K}), labels = h.tensor({N, 1, 1, 1}, DType::INT32),
                 result = h.tensor({1, 1, 1, 4}), grad = h.tensor({N, 1, 1, K});
    const float rows[N][K] = {
        {1, 2, 3, 4, 5, 6},  // label 5: top-1
        {1, 2, 3, 4, 5, 6},  // label 0: five beat it, not even top-5
        {1, 2, 3, 4, 5, 6},  // label 1: four beat it, top-5 only
        {3, 3, 3, 1, 1, 1},  // label 1: tied for first counts as top-1
        {2, 2, 2, 2, 2, 2},  // label 4: all tied, top-1
        {5, 5, 5, 5, 5, 1},  // label 5: five beat it
    };
    const int32_t ls[N] = {5, 0, 1, 1, 4, 5};
    double want_loss = 0;
    for (int64_t i = 0; i < N; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        h.f32(logits)[i * K + k] = rows[i][k];
        sum += std::exp(static_cast<double>(rows[i][k]));
      }
      h.i32(labels)[i] = ls[i];
      want_loss += std::log(sum) - rows[i][ls[i]];
    }
    GraphNode node = node_for(9);
    cpu::softmax_ce_fwd_bwd(h.args({logits, labels}, {result, grad}, &node));
    QVERIFY(std::fabs(h.f32(result)[0] - want_loss) < 1e-5 * want_loss);
    QCOMPARE(h.f32(result)[1], 3.0f);  // samples 0, 3, 4
    QCOMPARE(h.f32(result)[2], 4.0f);  // and sample 2
    QCOMPARE(h.f32(result)[3], 6.0f);
    // The forward-only op gives the same block.
    h.f32(result)[1] = -1;
    cpu::softmax_ce_fwd(h.args({logits, labels}, {result}, &node));
    QCOMPARE(h.f32(result)[1], 3.0f);
    QCOMPARE(h.f32(result)[2], 4.0f);
    // Gradient rows sum to zero (softmax minus one-hot).
    for (int64_t i = 0; i < N; ++i) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += h.f32(grad)[i * K + k];
      QVERIFY(std::fabs(s) < 1e-6);
    }
  }

  void softmaxCrossEntropyFewClassesCountAllInTop5() {
    KernelHarness h;
    const size_t logits = h.tensor({2, 1, 1, 3}), labels = h.tensor({2, 1, 1, 1}, DType::INT32),
                 result = h.tensor({1, 1, 1, 4});
    const float xs[] = {3, 2, 1, 0, 1, 2};
    std::copy(std::begin(xs), std::end(xs), h.f32(logits));
    h.i32(labels)[0] = 2;
    h.i32(labels)[1] = 2;
    cpu::softmax_ce_fwd(h.args({logits, labels}, {result}));
    QCOMPARE(h.f32(result)[1], 1.0f);
    QCOMPARE(h.f32(result)[2], 2.0f);
    QCOMPARE(h.f32(result)[3], 2.0f);
  }

  void softmaxCrossEntropyCountsTheConfusionMatrix() {
    KernelHarness h;
    const size_t logits = h.tensor({4, 1, 1, 3}), labels = h.tensor({4, 1, 1, 1}, DType::INT32),
                 result = h.tensor({1, 1, 1, 4}), confusion = h.tensor({1, 1, 3, 3});
    // Predictions: 0, 2, 2 and, as top-1 counts a tie with the label as a hit, 1.
    const float xs[] = {5, 1, 1, 0, 1, 3, 2, 2, 4, 7, 7, 0};
    std::copy(std::begin(xs), std::end(xs), h.f32(logits));
    const int32_t ys[] = {0, 2, 1, 1};
    std::copy(std::begin(ys), std::end(ys), h.i32(labels));
    GraphNode overwrite = node_for(-1), accumulate = node_for(-1, 0b10);
    for (int k = 0; k < 9; ++k) h.f32(confusion)[k] = 99.0f;
    cpu::softmax_ce_fwd(h.args({logits, labels}, {result, confusion}, &overwrite));
    const float once[] = {1, 0, 0, 0, 1, 1, 0, 0, 1};  // row: true label, column: predicted
    for (int k = 0; k < 9; ++k) QCOMPARE(h.f32(confusion)[k], once[k]);
    QCOMPARE(h.f32(result)[1], 3.0f);  // top-1 agrees with the diagonal
    // A second batch adds to the counts.
    cpu::softmax_ce_fwd(h.args({logits, labels}, {result, confusion}, &accumulate));
    for (int k = 0; k < 9; ++k) QCOMPARE(h.f32(confusion)[k], 2 * once[k]);
  }

  void softmaxCrossEntropyGradientIsOfTheMeanLoss() {
    std::mt19937 rng(23);
    KernelHarness h;
    const int64_t N = 4, K = 7;
    const size_t logits = h.tensor({N, 1, 1, K}), labels = h.tensor({N, 1, 1, 1}, DType::INT32),
                 result = h.tensor({1, 1, 1, 4}), grad = h.tensor({N, 1, 1, K});
    h.fill_random(logits, rng, -3.0f, 3.0f);
    for (int64_t i = 0; i < N; ++i) h.i32(labels)[i] = static_cast<int32_t>((i * 3) % K);
    GraphNode node = node_for(9);
    cpu::softmax_ce_fwd_bwd(h.args({logits, labels}, {result, grad}, &node));
    const KernelArgs fa = h.args({logits, labels}, {result}, &node);
    const double err = gradient_check(h.f32(logits), N * K, h.f32(grad), [&] {
      cpu::softmax_ce_fwd(fa);
      return static_cast<double>(h.f32(result)[0]) / N;
    });
    QVERIFY2(err < kGradTolerance, qPrintable(QString::number(err)));
    // accumulate(1) adds the gradient onto the slot.
    std::vector<float> first(h.f32(grad), h.f32(grad) + N * K);
    GraphNode acc = node_for(9, 0b10);
    cpu::softmax_ce_fwd_bwd(h.args({logits, labels}, {result, grad}, &acc));
    for (int64_t i = 0; i < N * K; ++i)
      QVERIFY(std::fabs(h.f32(grad)[i] - 2 * first[static_cast<size_t>(i)]) < 1e-7f);
  }

  void softmaxCrossEntropyBadLabelGivesNaN() {
    KernelHarness h;
    const size_t logits = h.tensor({3, 1, 1, 4}), labels = h.tensor({3, 1, 1, 1}, DType::INT32),
                 result = h.tensor({1, 1, 1, 4}), grad = h.tensor({3, 1, 1, 4});
    for (int i = 0; i < 12; ++i) h.f32(logits)[i] = static_cast<float>(i % 4);
    h.i32(labels)[0] = 3;
    h.i32(labels)[1] = 4;  // out of range
    h.i32(labels)[2] = -1;
    for (int i = 0; i < 12; ++i) h.f32(grad)[i] = 9.0f;
    cpu::softmax_ce_fwd_bwd(h.args({logits, labels}, {result, grad}));
    QVERIFY(std::isnan(h.f32(result)[0]));
    QCOMPARE(h.f32(result)[1], 1.0f);
    QCOMPARE(h.f32(result)[3], 3.0f);
    for (int i = 4; i < 12; ++i) QCOMPARE(h.f32(grad)[i], 0.0f);
    QVERIFY(h.f32(grad)[3] < 0.0f);  // the valid sample's label logit
  }
};

QTEST_APPLESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"

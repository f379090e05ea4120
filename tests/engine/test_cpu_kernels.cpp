// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CPU compute kernels: the op -> kernel table, the
// resolved sub-kind an activation needs, the accuracy of the vectorisable
// exp/tanh/sigmoid, and the properties of the counter-based dropout masks
// (rate, determinism across threads, independence of the world size). Every
// op's values against a plain reference, on every backend: engine.backend_ops.
#include <QtTest>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/dropout.h"
#include "backends/cpu/kernels/fast_math.h"
#include "backends/cpu/kernels/softmax_ce.h"
#include "kernel_harness.h"

using namespace tr;
using tr::test::KernelHarness;
using tr::test::layer_with;

namespace {

GraphNode node_for(int layer, uint8_t accumulate_mask = 0) {
  GraphNode n;
  n.layer = layer;
  n.accumulate_mask = accumulate_mask;
  return n;
}

}  // namespace

class TestCpuKernels : public QObject {
  Q_OBJECT

 private slots:
  // ---- the table ----------------------------------------------------------

  // In every build of our own kernels (kernel_builds.h; engine.cpu_kernel_builds
  // compares the builds' bits).
  void everyOpHasAKernelExceptTheBackendsOwn() {
    const std::vector<const cpu::OwnKernels*> builds = cpu::runnable_own_kernels();
    for (const cpu::OwnKernels* own : builds) {
      for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
        const ComputeOp op = static_cast<ComputeOp>(i);
        QCOMPARE(cpu::compute_kernel(op, *own) == nullptr, op == ComputeOp::H2D_INPUT);
      }
      for (int i = 0; i < static_cast<int>(RangeOp::NUM_RANGE_OPS); ++i) {
        const RangeOp op = static_cast<RangeOp>(i);
        QCOMPARE(cpu::range_kernel(op, *own) == nullptr, is_collective(op));
      }
      QVERIFY(cpu::range_kernel(RangeOp::ALLREDUCE_MEAN, *own) == nullptr);
      QVERIFY(cpu::range_kernel(RangeOp::ALLREDUCE_SUM, *own) == nullptr);
      QVERIFY(cpu::compute_kernel(ComputeOp::NUM_COMPUTE_OPS, *own) == nullptr);
    }
    // The portable build's kernels are this library's functions.
    const cpu::OwnKernels& portable = cpu::portable_own_kernels();
    QVERIFY(cpu::compute_kernel(ComputeOp::BN_BWD, portable) == &cpu::bn_bwd);
    QVERIFY(cpu::compute_kernel(ComputeOp::SOFTMAX_CE_FWD, portable) == &cpu::softmax_ce_fwd);
  }

  // ---- activations --------------------------------------------------------

  void activationNeedsItsSubKind() {
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
};

QTEST_APPLESS_MAIN(TestCpuKernels)
#include "test_cpu_kernels.moc"

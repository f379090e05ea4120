// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CPU's convolution and linear kernels (oneDNN):
// the first layer's backward writes nothing but the weight gradients, dX may
// overwrite X, an absent dX slot is skipped, the model shapes run on oneDNN's
// fast implementations, concurrent calls agree, and bad operands name their
// layer. Their values against plain references, in every mode and on every
// backend, are engine.backend_ops'.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/onednn_info.h"
#include "kernel_harness.h"

using namespace tr;
using tr::test::KernelHarness;

namespace {

struct Conv {
  int64_t n, h, w, ci, co, kh, kw, sh, sw, ph, pw;
  int64_t ho() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - kw) / sw + 1; }
};

// max |got - want| / max |want| over n values.
double rel_error(const float* got, const float* want, int64_t n) {
  double diff = 0.0, scale = 1e-30;
  for (int64_t k = 0; k < n; ++k) {
    diff = std::max(diff, std::fabs(double(got[k]) - want[k]));
    scale = std::max(scale, std::fabs(double(want[k])));
  }
  return diff / scale;
}

std::vector<float> copy_of(KernelHarness& h, size_t t) {
  return {h.f32(t), h.f32(t) + h.elements(t)};
}

// The harness allocates each tensor's whole FP32 slot zero-filled; nothing a
// kernel writes may land past the tensor's elements.
bool tail_is_zero(KernelHarness& h, size_t t, const Shape& s) {
  const float* p = h.f32(t);
  const int64_t slot_floats =
      static_cast<int64_t>(DTensor::slot_bytes_for(s, DType::FP32, Region::T_SCRATCH) / 4);
  for (int64_t k = h.elements(t); k < slot_floats; ++k)
    if (p[k] != 0.0f) return false;
  return true;
}

LayerNode conv_layer(const Conv& c, bool bias) {
  LayerNode l;
  l.id = "conv";
  l.type = LayerType::Conv2d;
  l.params.out_channels = c.co;
  l.params.kernel_h = c.kh;
  l.params.kernel_w = c.kw;
  l.params.stride_h = c.sh;
  l.params.stride_w = c.sw;
  l.params.pad_h = c.ph;
  l.params.pad_w = c.pw;
  l.params.bias = bias;
  return l;
}

GraphNode plain_node() {
  GraphNode n;
  n.layer = 1;
  return n;
}

// One convolution with all its tensors in a harness: x, w, (b), y, dy, dw, (db), dx.
struct ConvSetup {
  Conv c;
  bool bias;
  LayerNode layer;
  KernelHarness h;
  size_t x, w, b = 0, y, dy, dw, db = 0, dx;
  Shape xs, ws, ys;

  ConvSetup(const Conv& conv, bool with_bias, unsigned seed)
      : c(conv), bias(with_bias), layer(conv_layer(conv, with_bias)) {
    xs = {c.n, c.h, c.w, c.ci};
    ws = {c.co, c.kh, c.kw, c.ci};
    ys = {c.n, c.ho(), c.wo(), c.co};
    x = h.tensor(xs);
    w = h.tensor(ws);
    if (bias) b = h.tensor({1, 1, 1, c.co});
    y = h.tensor(ys);
    dy = h.tensor(ys);
    dw = h.tensor(ws);
    if (bias) db = h.tensor({1, 1, 1, c.co});
    dx = h.tensor(xs);
    std::mt19937 rng(seed);
    h.fill_random(x, rng);
    h.fill_random(w, rng, -0.5f, 0.5f);
    if (bias) h.fill_random(b, rng);
    h.fill_random(dy, rng);
  }
  KernelArgs fwd_args() {
    return bias ? h.args({x, w, b}, {y}, nullptr, &layer) : h.args({x, w}, {y}, nullptr, &layer);
  }
  KernelArgs bwd_args(const GraphNode* node) {
    return bias ? h.args({x, w, dy}, {dw, db, dx}, node, &layer)
                : h.args({x, w, dy}, {dw, dx}, node, &layer);
  }
  KernelArgs first_args() {
    return bias ? h.args({x, dy}, {dw, db}, nullptr, &layer)
                : h.args({x, dy}, {dw}, nullptr, &layer);
  }
};

// Odd sizes, strides, paddings and non-square windows.
void conv_cases() {
  QTest::addColumn<Conv>("conv");
  QTest::addColumn<bool>("bias");
  //                                 n   h   w  ci  co kh kw sh sw ph pw
  QTest::newRow("3x3 s1 p1 3->16") << Conv{5, 9, 9, 3, 16, 3, 3, 1, 1, 1, 1} << true;
  QTest::newRow("5x5 s1 p2 1->6") << Conv{5, 12, 12, 1, 6, 5, 5, 1, 1, 2, 2} << true;
  QTest::newRow("7x7 s2 p3 3->16") << Conv{1, 15, 15, 3, 16, 7, 7, 2, 2, 3, 3} << false;
  QTest::newRow("1x3 s2,1 p0,1 3->6") << Conv{1, 7, 6, 3, 6, 1, 3, 2, 1, 0, 1} << true;
}

}  // namespace

Q_DECLARE_METATYPE(Conv)

class TestCpuDenseKernels : public QObject {
  Q_OBJECT

 private slots:
  // The first layer: the same weight (and bias) gradient as the whole
  // backward, no dx, and nothing else written.
  void convBwdFirstWritesOnlyWeightGrads_data() { conv_cases(); }
  void convBwdFirstWritesOnlyWeightGrads() {
    QFETCH(Conv, conv);
    QFETCH(bool, bias);
    ConvSetup whole(conv, bias, 5);
    const GraphNode node = plain_node();
    cpu::conv_bwd(whole.bwd_args(&node));
    ConvSetup s(conv, bias, 5);
    const std::vector<float> x_before = copy_of(s.h, s.x), dy_before = copy_of(s.h, s.dy);
    const std::vector<float> dx_before = copy_of(s.h, s.dx);
    cpu::conv_bwd_first(s.first_args());
    QVERIFY(copy_of(s.h, s.dw) == copy_of(whole.h, whole.dw));
    if (bias) QVERIFY(copy_of(s.h, s.db) == copy_of(whole.h, whole.db));
    QVERIFY(copy_of(s.h, s.x) == x_before);
    QVERIFY(copy_of(s.h, s.dy) == dy_before);
    QVERIFY(copy_of(s.h, s.dx) == dx_before);
    QVERIFY(tail_is_zero(s.h, s.dw, s.ws));
    if (bias) QVERIFY(tail_is_zero(s.h, s.db, Shape{1, 1, 1, conv.co}));
  }

  // dX may overwrite X in place (ENGINE.md §4): one call must read X for dW
  // before it writes dX, and give what the out-of-place call gives.
  void convBackwardDxInPlaceOfX() {
    const Conv conv{3, 8, 8, 6, 16, 3, 3, 1, 1, 1, 1};
    const GraphNode node = plain_node();
    ConvSetup apart(conv, true, 10);
    cpu::conv_bwd(apart.bwd_args(&node));
    ConvSetup s(conv, true, 10);
    cpu::conv_bwd(s.h.args({s.x, s.w, s.dy}, {s.dw, s.db, s.x}, &node, &s.layer));
    QVERIFY(copy_of(s.h, s.dw) == copy_of(apart.h, apart.dw));
    QVERIFY(copy_of(s.h, s.x) == copy_of(apart.h, apart.dx));
  }

  // A conv fed directly by the input node has no dx slot: the kernel skips dX.
  void convBackwardWithoutDxSlot() {
    const Conv conv{2, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1};
    const GraphNode node = plain_node();
    ConvSetup whole(conv, true, 6);
    cpu::conv_bwd(whole.bwd_args(&node));
    ConvSetup s(conv, true, 6);
    KernelArgs a = s.bwd_args(&node);
    a.out.back() = TensorArg{};
    cpu::conv_bwd(a);
    QVERIFY(copy_of(s.h, s.dw) == copy_of(whole.h, whole.dw));
    QVERIFY(std::all_of(s.h.f32(s.dx), s.h.f32(s.dx) + s.h.elements(s.dx),
                        [](float v) { return v == 0.0f; }));
  }

  // ---- implementation choice, threads, errors -----------------------------

  // The model shapes must run on oneDNN's jit/brgemm kernels, never on its
  // reference code (thousands of times slower, and silent).
  void modelShapesUseFastImplementations_data() {
    QTest::addColumn<Conv>("conv");
    QTest::addColumn<bool>("bias");
    //                                 n   h   w  ci  co kh kw sh sw ph pw
    QTest::newRow("lenet conv1") << Conv{128, 28, 28, 1, 6, 5, 5, 1, 1, 2, 2} << true;
    QTest::newRow("lenet conv2") << Conv{128, 14, 14, 6, 16, 5, 5, 1, 1, 0, 0} << true;
    QTest::newRow("resnet8 stem") << Conv{128, 28, 28, 1, 16, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s1") << Conv{128, 28, 28, 16, 16, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s2 down") << Conv{128, 28, 28, 16, 32, 3, 3, 2, 2, 1, 1} << false;
    QTest::newRow("resnet8 s2 sc") << Conv{128, 28, 28, 16, 32, 1, 1, 2, 2, 0, 0} << false;
    QTest::newRow("resnet8 s2") << Conv{128, 14, 14, 32, 32, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s3 down") << Conv{128, 14, 14, 32, 64, 3, 3, 2, 2, 1, 1} << false;
    QTest::newRow("resnet8 s3 sc") << Conv{128, 14, 14, 32, 64, 1, 1, 2, 2, 0, 0} << false;
    QTest::newRow("resnet8 s3") << Conv{128, 7, 7, 64, 64, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv1") << Conv{128, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv2") << Conv{128, 28, 28, 32, 32, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv3") << Conv{128, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv4") << Conv{128, 14, 14, 64, 64, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("last batch 96") << Conv{96, 14, 14, 32, 32, 3, 3, 1, 1, 1, 1} << false;
  }
  void modelShapesUseFastImplementations() {
    QFETCH(Conv, conv);
    QFETCH(bool, bias);
    // Descriptors only: the primitives are created, never run, so no big buffers.
    DTensor x, w, b, y;
    x.shape = {conv.n, conv.h, conv.w, conv.ci};
    w.shape = {conv.co, conv.kh, conv.kw, conv.ci};
    b.shape = {1, 1, 1, conv.co};
    y.shape = {conv.n, conv.ho(), conv.wo(), conv.co};
    const LayerNode layer = conv_layer(conv, bias);
    KernelArgs a;
    a.layer_params = test::resolved(layer);
    a.in = {{nullptr, &x}, {nullptr, &w}};
    if (bias) a.in.push_back({nullptr, &b});
    a.out = {{nullptr, &y}};
    const cpu::dense_info::ConvImpls impls = cpu::dense_info::conv_impls(a);
    const QByteArray names =
        QByteArray::fromStdString(impls.fwd + " / " + impls.bwd_data + " / " + impls.bwd_weights);
    qDebug("%s: %s", QTest::currentDataTag(), names.constData());
    QVERIFY2(!cpu::dense_info::is_reference_impl(impls.fwd), names.constData());
    QVERIFY2(!cpu::dense_info::is_reference_impl(impls.bwd_data), names.constData());
    QVERIFY2(!cpu::dense_info::is_reference_impl(impls.bwd_weights), names.constData());
  }

  // The runtime calls kernels from several stream threads at once (dW, dB
  // and dX of one layer, other layers' work): results must not depend on it,
  // including the first calls, which create the cached primitives.
  void concurrentCallsGiveTheSameResults() {
    const Conv convs[] = {{4, 12, 12, 6, 16, 3, 3, 1, 1, 1, 1},
                          {3, 9, 9, 16, 8, 5, 5, 2, 2, 2, 2},
                          {2, 13, 11, 3, 32, 1, 3, 1, 2, 0, 1}};
    constexpr int kThreads = 6;
    const GraphNode node = plain_node();
    // What one thread alone computes, from the same tensors.
    std::vector<std::vector<float>> alone_y, alone_dw, alone_dx;
    for (int t = 0; t < 3; ++t) {
      ConvSetup s(convs[t], t % 2 == 0, 100 + static_cast<unsigned>(t));
      cpu::conv_fwd(s.fwd_args());
      cpu::conv_bwd(s.bwd_args(&node));
      alone_y.push_back(copy_of(s.h, s.y));
      alone_dw.push_back(copy_of(s.h, s.dw));
      alone_dx.push_back(copy_of(s.h, s.dx));
    }
    std::vector<std::unique_ptr<ConvSetup>> setups;
    for (int t = 0; t < kThreads; ++t)
      setups.push_back(std::make_unique<ConvSetup>(convs[t % 3], t % 3 % 2 == 0,
                                                   100 + static_cast<unsigned>(t % 3)));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ConvSetup& s = *setups[static_cast<size_t>(t)];
        const size_t k = static_cast<size_t>(t % 3);
        for (int r = 0; r < 20; ++r) {
          cpu::conv_fwd(s.fwd_args());
          cpu::conv_bwd(s.bwd_args(&node));
          const double e =
              std::max({rel_error(s.h.f32(s.y), alone_y[k].data(), s.h.elements(s.y)),
                        rel_error(s.h.f32(s.dw), alone_dw[k].data(), s.h.elements(s.dw)),
                        rel_error(s.h.f32(s.dx), alone_dx[k].data(), s.h.elements(s.dx))});
          if (!(e < 1e-6)) ++failures;
        }
      });
    for (std::thread& t : threads) t.join();
    QCOMPARE(failures.load(), 0);
  }

  void badArgumentsAreReportedWithTheLayer() {
    const Conv conv{1, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1};
    ConvSetup s(conv, false, 8);
    // Output of the wrong spatial size.
    KernelHarness& h = s.h;
    const size_t wrong = h.tensor({1, 5, 5, 4});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             cpu::conv_fwd(h.args({s.x, s.w}, {wrong}, nullptr, &s.layer)));
    // FP16 operands are staged to FP32 in the stream's workspace, which the
    // backend provides at capture: a call without one is refused, naming the layer.
    const size_t half = h.tensor({1, 6, 6, 3}, DType::FP16);
    try {
      cpu::conv_fwd(h.args({half, s.w}, {s.y}, nullptr, &s.layer));
      QFAIL("fp16 accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("'conv'") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("fp16") != std::string::npos, e.what());
    }
    // Linear weights that do not match the flattened input.
    KernelHarness l;
    LayerNode fc;
    fc.id = "fc";
    fc.type = LayerType::Linear;
    fc.params.out_channels = 4;
    fc.params.bias = false;
    const size_t x = l.tensor({2, 2, 2, 3}), bad_w = l.tensor({4, 1, 1, 11}),
                 y = l.tensor({2, 1, 1, 4});
    try {
      cpu::linear_fwd(l.args({x, bad_w}, {y}, nullptr, &fc));
      QFAIL("mismatched weights accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(std::string(e.what()).find("'fc'") != std::string::npos, e.what());
    }
  }
};

QTEST_APPLESS_MAIN(TestCpuDenseKernels)
#include "test_cpu_dense_kernels.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Pins the CPU convolution and linear kernels against plain reference loops and finite differences.
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
using tr::test::gradient_check;
using tr::test::KernelHarness;

namespace {

// The reference: direct loops in double, written for obviousness, not speed.
// The fast kernels must agree with them to a relative 1e-4.
namespace reference {

struct Conv {
  int64_t n, h, w, ci, co, kh, kw, sh, sw, ph, pw;
  int64_t g = 1;                          // groups: output o sees input channels of its group only
  int64_t cig() const { return ci / g; }  // input channels per group (the weights' C)
  int64_t ho() const { return (h + 2 * ph - kh) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - kw) / sw + 1; }
  int64_t xi(int64_t b, int64_t y, int64_t x, int64_t c) const {
    return ((b * h + y) * w + x) * ci + c;
  }
  int64_t yi(int64_t b, int64_t y, int64_t x, int64_t c) const {
    return ((b * ho() + y) * wo() + x) * co + c;
  }
  int64_t wi(int64_t o, int64_t i, int64_t j, int64_t c) const {
    return ((o * kh + i) * kw + j) * cig() + c;
  }

  // Calls f(x index, y index, w index) for every multiply of the convolution.
  template <class F>
  void for_each_tap(F f) const {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oy = 0; oy < ho(); ++oy)
        for (int64_t ox = 0; ox < wo(); ++ox)
          for (int64_t o = 0; o < co; ++o)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = oy * sh - ph + i, ix = ox * sw - pw + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                const int64_t first = o / (co / g) * cig();
                for (int64_t c = 0; c < cig(); ++c)
                  f(xi(b, iy, ix, first + c), yi(b, oy, ox, o), wi(o, i, j, c));
              }
  }

  std::vector<double> fwd(const float* x, const float* wt, const float* bias) const {
    std::vector<double> y(static_cast<size_t>(n * ho() * wo() * co), 0.0);
    for_each_tap([&](int64_t a, int64_t b, int64_t k) {
      y[static_cast<size_t>(b)] += double(x[a]) * wt[k];
    });
    if (bias)
      for (size_t k = 0; k < y.size(); ++k) y[k] += bias[k % static_cast<size_t>(co)];
    return y;
  }
  std::vector<double> dx(const float* wt, const float* dy) const {
    std::vector<double> out(static_cast<size_t>(n * h * w * ci), 0.0);
    for_each_tap([&](int64_t a, int64_t b, int64_t k) {
      out[static_cast<size_t>(a)] += double(dy[b]) * wt[k];
    });
    return out;
  }
  std::vector<double> dw(const float* x, const float* dy) const {
    std::vector<double> out(static_cast<size_t>(co * kh * kw * cig()), 0.0);
    for_each_tap([&](int64_t a, int64_t b, int64_t k) {
      out[static_cast<size_t>(k)] += double(dy[b]) * x[a];
    });
    return out;
  }
  std::vector<double> db(const float* dy) const {
    std::vector<double> out(static_cast<size_t>(co), 0.0);
    for (int64_t k = 0; k < n * ho() * wo() * co; ++k) out[static_cast<size_t>(k % co)] += dy[k];
    return out;
  }
};

struct Linear {
  int64_t n, k, o;
  std::vector<double> fwd(const float* x, const float* w, const float* bias) const {
    std::vector<double> y(static_cast<size_t>(n * o), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < o; ++j) {
        double s = bias ? bias[j] : 0.0;
        for (int64_t i = 0; i < k; ++i) s += double(x[r * k + i]) * w[j * k + i];
        y[static_cast<size_t>(r * o + j)] = s;
      }
    return y;
  }
  std::vector<double> dx(const float* w, const float* dy) const {
    std::vector<double> out(static_cast<size_t>(n * k), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < o; ++j)
        for (int64_t i = 0; i < k; ++i)
          out[static_cast<size_t>(r * k + i)] += double(dy[r * o + j]) * w[j * k + i];
    return out;
  }
  std::vector<double> dw(const float* x, const float* dy) const {
    std::vector<double> out(static_cast<size_t>(o * k), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < o; ++j)
        for (int64_t i = 0; i < k; ++i)
          out[static_cast<size_t>(j * k + i)] += double(dy[r * o + j]) * x[r * k + i];
    return out;
  }
  std::vector<double> db(const float* dy) const {
    std::vector<double> out(static_cast<size_t>(o), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < o; ++j) out[static_cast<size_t>(j)] += dy[r * o + j];
    return out;
  }
};

}  // namespace reference

constexpr double kRefTolerance = 1e-4;
constexpr double kGradTolerance = 1e-2;

// max |got - want| / max |want|: normwise, so a near-zero entry of a sum of
// many terms does not make the bound meaningless.
double rel_error(const float* got, const std::vector<double>& want) {
  double diff = 0.0, scale = 1e-30;
  for (size_t k = 0; k < want.size(); ++k) {
    diff = std::max(diff, std::fabs(double(got[k]) - want[k]));
    scale = std::max(scale, std::fabs(want[k]));
  }
  return diff / scale;
}

std::vector<double> plus(std::vector<double> v, const std::vector<float>& base) {
  for (size_t k = 0; k < v.size(); ++k) v[k] += base[k];
  return v;
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

LayerNode conv_layer(const reference::Conv& c, bool bias) {
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
  l.params.groups = c.g;
  return l;
}

LayerNode linear_layer(int64_t out, bool bias) {
  LayerNode l;
  l.id = "fc";
  l.type = LayerType::Linear;
  l.params.out_channels = out;
  l.params.bias = bias;
  return l;
}

GraphNode node_with(uint8_t accumulate_mask) {
  GraphNode n;
  n.layer = 1;
  n.accumulate_mask = accumulate_mask;
  return n;
}

// One convolution with all its tensors in a harness: x, w, (b), y, dy, dw, (db), dx.
struct ConvSetup {
  reference::Conv c;
  bool bias;
  LayerNode layer;
  KernelHarness h;
  size_t x, w, b = 0, y, dy, dw, db = 0, dx;
  Shape xs, ws, ys;

  ConvSetup(const reference::Conv& conv, bool with_bias, unsigned seed)
      : c(conv), bias(with_bias), layer(conv_layer(conv, with_bias)) {
    xs = {c.n, c.h, c.w, c.ci};
    ws = {c.co, c.kh, c.kw, c.cig()};
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
  KernelArgs bwd_args(const GraphNode* node, int part = -1) {
    KernelArgs a = bias ? h.args({x, w, dy}, {dw, db, dx}, node, &layer)
                        : h.args({x, w, dy}, {dw, dx}, node, &layer);
    a.part = part;
    return a;
  }
  KernelArgs first_args() {
    return bias ? h.args({x, dy}, {dw, db}, nullptr, &layer)
                : h.args({x, dy}, {dw}, nullptr, &layer);
  }
  size_t dx_index() const { return bias ? 2 : 1; }
};

struct LinearSetup {
  reference::Linear l;
  bool bias;
  LayerNode layer;
  KernelHarness h;
  size_t x, w, b = 0, y, dy, dw, db = 0, dx;
  Shape xs, ws;

  LinearSetup(const Shape& in, int64_t out, bool with_bias, unsigned seed)
      : l{in.n, in.per_sample(), out}, bias(with_bias), layer(linear_layer(out, with_bias)) {
    xs = in;
    ws = {out, 1, 1, in.per_sample()};
    x = h.tensor(xs);
    w = h.tensor(ws);
    if (bias) b = h.tensor({1, 1, 1, out});
    y = h.tensor({in.n, 1, 1, out});
    dy = h.tensor({in.n, 1, 1, out});
    dw = h.tensor(ws);
    if (bias) db = h.tensor({1, 1, 1, out});
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
  KernelArgs bwd_args(const GraphNode* node, int part = -1) {
    KernelArgs a = bias ? h.args({x, w, dy}, {dw, db, dx}, node, &layer)
                        : h.args({x, w, dy}, {dw, dx}, node, &layer);
    a.part = part;
    return a;
  }
  KernelArgs first_args() {
    return bias ? h.args({x, dy}, {dw, db}, nullptr, &layer)
                : h.args({x, dy}, {dw}, nullptr, &layer);
  }
  size_t dx_index() const { return bias ? 2 : 1; }
};

double probe_loss(const float* out, const float* probe, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(out[i]) * probe[i];
  return s;
}

// The shapes every convolution test runs on: strides 1 and 2, padding 0-3,
// square and non-square kernels, 1..32 channels, batch 1 and 5, spatial sizes
// where the last window does not reach the edge.
void conv_cases() {
  QTest::addColumn<reference::Conv>("conv");
  QTest::addColumn<bool>("bias");
  //                                     n   h   w  ci  co kh kw sh sw ph pw
  QTest::newRow("3x3 s1 p1 3->16 b5") << reference::Conv{5, 9, 9, 3, 16, 3, 3, 1, 1, 1, 1} << true;
  QTest::newRow("3x3 s2 p1 16->32 b1")
      << reference::Conv{1, 10, 10, 16, 32, 3, 3, 2, 2, 1, 1} << false;
  QTest::newRow("1x1 s1 32->16 b5") << reference::Conv{5, 7, 7, 32, 16, 1, 1, 1, 1, 0, 0} << true;
  QTest::newRow("1x1 s2 16->32 b5") << reference::Conv{5, 8, 8, 16, 32, 1, 1, 2, 2, 0, 0} << false;
  QTest::newRow("5x5 s1 p2 1->6 b5 (lenet1)")
      << reference::Conv{5, 12, 12, 1, 6, 5, 5, 1, 1, 2, 2} << true;
  QTest::newRow("5x5 s1 p0 6->16 b5 (lenet2)")
      << reference::Conv{5, 10, 10, 6, 16, 5, 5, 1, 1, 0, 0} << true;
  QTest::newRow("7x7 s2 p3 3->16 b1")
      << reference::Conv{1, 15, 15, 3, 16, 7, 7, 2, 2, 3, 3} << false;
  QTest::newRow("3x1 s1 p1,0 6->3 b5") << reference::Conv{5, 6, 7, 6, 3, 3, 1, 1, 1, 1, 0} << true;
  QTest::newRow("1x3 s2,1 p0,1 3->6 b1")
      << reference::Conv{1, 7, 6, 3, 6, 1, 3, 2, 1, 0, 1} << true;
  QTest::newRow("3x3 s2 p0 1->1 b5 floor")
      << reference::Conv{5, 6, 6, 1, 1, 3, 3, 2, 2, 0, 0} << false;
  QTest::newRow("3x3 s1 p2 32->1 b1") << reference::Conv{1, 5, 5, 32, 1, 3, 3, 1, 1, 2, 2} << true;
  QTest::newRow("5x5 s2 p2 6->32 b1") << reference::Conv{1, 9, 9, 6, 32, 5, 5, 2, 2, 2, 2} << false;
  QTest::newRow("3x3 s1 p1 32->32 b5")
      << reference::Conv{5, 14, 14, 32, 32, 3, 3, 1, 1, 1, 1} << true;
  QTest::newRow("3x3 s1 p1 1->32 b5")
      << reference::Conv{5, 11, 11, 1, 32, 3, 3, 1, 1, 1, 1} << false;
  // Grouped and depthwise (groups = input channels, with and without a channel multiplier).
  QTest::newRow("3x3 s1 p1 8->16 g2 b5")
      << reference::Conv{5, 9, 9, 8, 16, 3, 3, 1, 1, 1, 1, 2} << true;
  QTest::newRow("1x1 s1 6->9 g3 b5")
      << reference::Conv{5, 7, 7, 6, 9, 1, 1, 1, 1, 0, 0, 3} << false;
  QTest::newRow("3x3 s2 p1 12->12 depthwise b5")
      << reference::Conv{5, 10, 10, 12, 12, 3, 3, 2, 2, 1, 1, 12} << true;
  QTest::newRow("5x5 s1 p2 4->8 depthwise x2 b1")
      << reference::Conv{1, 9, 9, 4, 8, 5, 5, 1, 1, 2, 2, 4} << false;
}

void linear_cases() {
  QTest::addColumn<Shape>("in");
  QTest::addColumn<int>("out");
  QTest::addColumn<bool>("bias");
  QTest::newRow("[5,4,4,3]->10") << Shape{5, 4, 4, 3} << 10 << true;
  QTest::newRow("[1,1,1,400]->120") << Shape{1, 1, 1, 400} << 120 << true;
  QTest::newRow("[5,2,3,16]->1") << Shape{5, 2, 3, 16} << 1 << false;
  QTest::newRow("[128,1,1,400]->120 (lenet fc1)") << Shape{128, 1, 1, 400} << 120 << true;
  QTest::newRow("[5,1,1,6]->32") << Shape{5, 1, 1, 6} << 32 << false;
}

}  // namespace

Q_DECLARE_METATYPE(reference::Conv)
Q_DECLARE_METATYPE(tr::Shape)

class TestCpuDenseKernels : public QObject {
  Q_OBJECT

 private slots:
  // ---- convolution against the reference ---------------------------------

  void convForwardMatchesReference_data() { conv_cases(); }
  void convForwardMatchesReference() {
    QFETCH(reference::Conv, conv);
    QFETCH(bool, bias);
    ConvSetup s(conv, bias, 1);
    cpu::conv_fwd(s.fwd_args());
    const auto want = conv.fwd(s.h.f32(s.x), s.h.f32(s.w), bias ? s.h.f32(s.b) : nullptr);
    QVERIFY2(rel_error(s.h.f32(s.y), want) < kRefTolerance,
             QByteArray::number(rel_error(s.h.f32(s.y), want)));
    QVERIFY(tail_is_zero(s.h, s.y, s.ys));
  }

  void convBackwardMatchesReference_data() { conv_cases(); }
  void convBackwardMatchesReference() {
    QFETCH(reference::Conv, conv);
    QFETCH(bool, bias);
    ConvSetup s(conv, bias, 2);
    const std::vector<float> x_before = copy_of(s.h, s.x), dy_before = copy_of(s.h, s.dy);
    const GraphNode node = node_with(0);
    cpu::conv_bwd(s.bwd_args(&node));
    const auto dw = conv.dw(s.h.f32(s.x), s.h.f32(s.dy));
    const auto dx = conv.dx(s.h.f32(s.w), s.h.f32(s.dy));
    QVERIFY2(rel_error(s.h.f32(s.dw), dw) < kRefTolerance, "dw");
    QVERIFY2(rel_error(s.h.f32(s.dx), dx) < kRefTolerance, "dx");
    if (bias) QVERIFY2(rel_error(s.h.f32(s.db), conv.db(s.h.f32(s.dy))) < kRefTolerance, "db");
    QVERIFY(copy_of(s.h, s.x) == x_before);
    QVERIFY(copy_of(s.h, s.dy) == dy_before);
    QVERIFY(tail_is_zero(s.h, s.dw, s.ws));
    QVERIFY(tail_is_zero(s.h, s.dx, s.xs));
  }

  // A gradient slot with two consumers: the second adds into dx; dw and db
  // are still overwritten.
  void convBackwardAccumulatesIntoDx_data() { conv_cases(); }
  void convBackwardAccumulatesIntoDx() {
    QFETCH(reference::Conv, conv);
    QFETCH(bool, bias);
    ConvSetup s(conv, bias, 3);
    std::mt19937 rng(33);
    s.h.fill_random(s.dx, rng);
    s.h.fill_random(s.dw, rng);
    if (bias) s.h.fill_random(s.db, rng);
    const std::vector<float> dx_before = copy_of(s.h, s.dx);
    const GraphNode node = node_with(static_cast<uint8_t>(1u << s.dx_index()));
    cpu::conv_bwd(s.bwd_args(&node));
    const auto dx = plus(conv.dx(s.h.f32(s.w), s.h.f32(s.dy)), dx_before);
    QVERIFY2(rel_error(s.h.f32(s.dx), dx) < kRefTolerance, "dx");
    QVERIFY2(rel_error(s.h.f32(s.dw), conv.dw(s.h.f32(s.x), s.h.f32(s.dy))) < kRefTolerance, "dw");
    if (bias) QVERIFY2(rel_error(s.h.f32(s.db), conv.db(s.h.f32(s.dy))) < kRefTolerance, "db");
  }

  // The runtime runs dW, dB and dX as separate launches on three streams.
  // Each part writes only its own output, and together they equal one call.
  void convPartsEqualAll_data() { conv_cases(); }
  void convPartsEqualAll() {
    QFETCH(reference::Conv, conv);
    QFETCH(bool, bias);
    ConvSetup all(conv, bias, 4), parts(conv, bias, 4);
    const GraphNode node = node_with(0);
    cpu::conv_bwd(all.bwd_args(&node));

    constexpr float kSentinel = 12345.0f;
    auto fill = [&](size_t t) {
      std::fill(parts.h.f32(t), parts.h.f32(t) + parts.h.elements(t), kSentinel);
    };
    auto untouched = [&](size_t t) {
      return std::all_of(parts.h.f32(t), parts.h.f32(t) + parts.h.elements(t),
                         [](float v) { return v == kSentinel; });
    };
    fill(parts.dw);
    fill(parts.dx);
    if (bias) fill(parts.db);
    cpu::conv_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DW)));
    QVERIFY(untouched(parts.dx));
    if (bias) QVERIFY(untouched(parts.db));
    const std::vector<float> dw_after_dw = copy_of(parts.h, parts.dw);
    cpu::conv_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DB)));
    QVERIFY(untouched(parts.dx));
    QVERIFY(copy_of(parts.h, parts.dw) == dw_after_dw);
    const std::vector<float> db_after_db = bias ? copy_of(parts.h, parts.db) : std::vector<float>{};
    cpu::conv_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DX)));
    QVERIFY(copy_of(parts.h, parts.dw) == dw_after_dw);
    if (bias) QVERIFY(copy_of(parts.h, parts.db) == db_after_db);

    auto as_double = [](const float* p, int64_t n) { return std::vector<double>(p, p + n); };
    QVERIFY(rel_error(parts.h.f32(parts.dw), as_double(all.h.f32(all.dw), all.h.elements(all.dw))) <
            1e-6);
    QVERIFY(rel_error(parts.h.f32(parts.dx), as_double(all.h.f32(all.dx), all.h.elements(all.dx))) <
            1e-6);
    if (bias)
      QVERIFY(rel_error(parts.h.f32(parts.db),
                        as_double(all.h.f32(all.db), all.h.elements(all.db))) < 1e-6);
  }

  // The first layer: weight (and bias) gradient only, no dx, nothing else written.
  void convBwdFirstWritesOnlyWeightGrads_data() { conv_cases(); }
  void convBwdFirstWritesOnlyWeightGrads() {
    QFETCH(reference::Conv, conv);
    QFETCH(bool, bias);
    ConvSetup s(conv, bias, 5);
    const std::vector<float> x_before = copy_of(s.h, s.x), dy_before = copy_of(s.h, s.dy);
    const std::vector<float> dx_before = copy_of(s.h, s.dx);
    cpu::conv_bwd_first(s.first_args());
    QVERIFY2(rel_error(s.h.f32(s.dw), conv.dw(s.h.f32(s.x), s.h.f32(s.dy))) < kRefTolerance, "dw");
    if (bias) QVERIFY2(rel_error(s.h.f32(s.db), conv.db(s.h.f32(s.dy))) < kRefTolerance, "db");
    QVERIFY(copy_of(s.h, s.x) == x_before);
    QVERIFY(copy_of(s.h, s.dy) == dy_before);
    QVERIFY(copy_of(s.h, s.dx) == dx_before);
    QVERIFY(tail_is_zero(s.h, s.dw, s.ws));
    if (bias) QVERIFY(tail_is_zero(s.h, s.db, Shape{1, 1, 1, conv.co}));
  }

  // dX may overwrite X in place (ENGINE.md §4): one call must read X for dW
  // before it writes dX.
  void convBackwardDxInPlaceOfX() {
    const reference::Conv conv{3, 8, 8, 6, 16, 3, 3, 1, 1, 1, 1};
    ConvSetup s(conv, true, 10);
    const std::vector<float> x = copy_of(s.h, s.x);
    const GraphNode node = node_with(0);
    cpu::conv_bwd(s.h.args({s.x, s.w, s.dy}, {s.dw, s.db, s.x}, &node, &s.layer));
    QVERIFY(rel_error(s.h.f32(s.dw), conv.dw(x.data(), s.h.f32(s.dy))) < kRefTolerance);
    QVERIFY(rel_error(s.h.f32(s.x), conv.dx(s.h.f32(s.w), s.h.f32(s.dy))) < kRefTolerance);
  }

  // A conv fed directly by the input node has no dx slot: the kernel skips dX.
  void convBackwardWithoutDxSlot() {
    const reference::Conv conv{2, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1};
    ConvSetup s(conv, true, 6);
    const GraphNode node = node_with(0);
    KernelArgs a = s.bwd_args(&node);
    a.out.back() = TensorArg{};
    cpu::conv_bwd(a);
    QVERIFY(rel_error(s.h.f32(s.dw), conv.dw(s.h.f32(s.x), s.h.f32(s.dy))) < kRefTolerance);
  }

  // ---- convolution against finite differences ----------------------------

  void convGradientCheck_data() {
    QTest::addColumn<reference::Conv>("conv");
    QTest::newRow("3x3 s2 p1 3->6") << reference::Conv{2, 7, 7, 3, 6, 3, 3, 2, 2, 1, 1};
    QTest::newRow("5x5 s1 p2 1->6") << reference::Conv{2, 8, 8, 1, 6, 5, 5, 1, 1, 2, 2};
    QTest::newRow("3x1 s1 p1,0 6->3") << reference::Conv{3, 5, 4, 6, 3, 3, 1, 1, 1, 1, 0};
  }
  void convGradientCheck() {
    QFETCH(reference::Conv, conv);
    ConvSetup s(conv, true, 7);
    const KernelArgs fa = s.fwd_args();
    const GraphNode node = node_with(0);
    cpu::conv_bwd(s.bwd_args(&node));  // dy is the probe
    auto loss = [&] {
      cpu::conv_fwd(fa);
      return probe_loss(s.h.f32(s.y), s.h.f32(s.dy), s.h.elements(s.y));
    };
    // 24 probes per tensor: every forward is an OpenMP-parallel oneDNN call,
    // which a loaded CI machine makes slow.
    constexpr int64_t kProbes = 24;
    const double ex =
        gradient_check(s.h.f32(s.x), s.h.elements(s.x), s.h.f32(s.dx), loss, 1e-2, kProbes);
    const double ew =
        gradient_check(s.h.f32(s.w), s.h.elements(s.w), s.h.f32(s.dw), loss, 1e-2, kProbes);
    const double eb =
        gradient_check(s.h.f32(s.b), s.h.elements(s.b), s.h.f32(s.db), loss, 1e-2, kProbes);
    QVERIFY2(ex < kGradTolerance, QByteArray::number(ex));
    QVERIFY2(ew < kGradTolerance, QByteArray::number(ew));
    QVERIFY2(eb < kGradTolerance, QByteArray::number(eb));
  }

  // ---- linear -------------------------------------------------------------

  void linearForwardMatchesReference_data() { linear_cases(); }
  void linearForwardMatchesReference() {
    QFETCH(Shape, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    LinearSetup s(in, out, bias, 11);
    cpu::linear_fwd(s.fwd_args());
    const auto want = s.l.fwd(s.h.f32(s.x), s.h.f32(s.w), bias ? s.h.f32(s.b) : nullptr);
    QVERIFY(rel_error(s.h.f32(s.y), want) < kRefTolerance);
  }

  void linearBackwardMatchesReference_data() { linear_cases(); }
  void linearBackwardMatchesReference() {
    QFETCH(Shape, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    for (bool accumulate : {false, true}) {
      LinearSetup s(in, out, bias, 12);
      std::mt19937 rng(5);
      s.h.fill_random(s.dx, rng);
      s.h.fill_random(s.dw, rng);
      const std::vector<float> dx_before = copy_of(s.h, s.dx);
      const GraphNode node = node_with(accumulate ? static_cast<uint8_t>(1u << s.dx_index()) : 0);
      cpu::linear_bwd(s.bwd_args(&node));
      auto dx = s.l.dx(s.h.f32(s.w), s.h.f32(s.dy));
      if (accumulate) dx = plus(dx, dx_before);
      QVERIFY2(rel_error(s.h.f32(s.dx), dx) < kRefTolerance, "dx");
      QVERIFY2(rel_error(s.h.f32(s.dw), s.l.dw(s.h.f32(s.x), s.h.f32(s.dy))) < kRefTolerance, "dw");
      if (bias) QVERIFY2(rel_error(s.h.f32(s.db), s.l.db(s.h.f32(s.dy))) < kRefTolerance, "db");
    }
  }

  void linearPartsEqualAllAndFirstWritesOnlyWeightGrads_data() { linear_cases(); }
  void linearPartsEqualAllAndFirstWritesOnlyWeightGrads() {
    QFETCH(Shape, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    LinearSetup all(in, out, bias, 13), parts(in, out, bias, 13), first(in, out, bias, 13);
    const GraphNode node = node_with(0);
    cpu::linear_bwd(all.bwd_args(&node));
    std::fill(parts.h.f32(parts.dx), parts.h.f32(parts.dx) + parts.h.elements(parts.dx), 7.0f);
    cpu::linear_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DW)));
    cpu::linear_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DB)));
    QVERIFY(parts.h.f32(parts.dx)[0] == 7.0f);
    cpu::linear_bwd(parts.bwd_args(&node, static_cast<int>(BwdPart::DX)));
    QVERIFY(copy_of(parts.h, parts.dw) == copy_of(all.h, all.dw));
    QVERIFY(copy_of(parts.h, parts.dx) == copy_of(all.h, all.dx));
    if (bias) QVERIFY(copy_of(parts.h, parts.db) == copy_of(all.h, all.db));

    const std::vector<float> dx_before = copy_of(first.h, first.dx);
    cpu::linear_bwd_first(first.first_args());
    QVERIFY(copy_of(first.h, first.dw) == copy_of(all.h, all.dw));
    if (bias) QVERIFY(copy_of(first.h, first.db) == copy_of(all.h, all.db));
    QVERIFY(copy_of(first.h, first.dx) == dx_before);
  }

  void linearGradientCheck() {
    LinearSetup s(Shape{3, 2, 2, 5}, 7, true, 14);
    const KernelArgs fa = s.fwd_args();
    const GraphNode node = node_with(0);
    cpu::linear_bwd(s.bwd_args(&node));
    auto loss = [&] {
      cpu::linear_fwd(fa);
      return probe_loss(s.h.f32(s.y), s.h.f32(s.dy), s.h.elements(s.y));
    };
    const double ex = gradient_check(s.h.f32(s.x), s.h.elements(s.x), s.h.f32(s.dx), loss);
    const double ew = gradient_check(s.h.f32(s.w), s.h.elements(s.w), s.h.f32(s.dw), loss);
    const double eb = gradient_check(s.h.f32(s.b), s.h.elements(s.b), s.h.f32(s.db), loss);
    QVERIFY2(ex < kGradTolerance, QByteArray::number(ex));
    QVERIFY2(ew < kGradTolerance, QByteArray::number(ew));
    QVERIFY2(eb < kGradTolerance, QByteArray::number(eb));
  }

  // ---- implementation choice, threads, errors -----------------------------

  // The model shapes must run on oneDNN's jit/brgemm kernels, never on its
  // reference code (thousands of times slower, and silent).
  void modelShapesUseFastImplementations_data() {
    QTest::addColumn<reference::Conv>("conv");
    QTest::addColumn<bool>("bias");
    //                                 n   h   w  ci  co kh kw sh sw ph pw
    QTest::newRow("lenet conv1") << reference::Conv{128, 28, 28, 1, 6, 5, 5, 1, 1, 2, 2} << true;
    QTest::newRow("lenet conv2") << reference::Conv{128, 14, 14, 6, 16, 5, 5, 1, 1, 0, 0} << true;
    QTest::newRow("resnet8 stem") << reference::Conv{128, 28, 28, 1, 16, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s1") << reference::Conv{128, 28, 28, 16, 16, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s2 down")
        << reference::Conv{128, 28, 28, 16, 32, 3, 3, 2, 2, 1, 1} << false;
    QTest::newRow("resnet8 s2 sc")
        << reference::Conv{128, 28, 28, 16, 32, 1, 1, 2, 2, 0, 0} << false;
    QTest::newRow("resnet8 s2") << reference::Conv{128, 14, 14, 32, 32, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("resnet8 s3 down")
        << reference::Conv{128, 14, 14, 32, 64, 3, 3, 2, 2, 1, 1} << false;
    QTest::newRow("resnet8 s3 sc")
        << reference::Conv{128, 14, 14, 32, 64, 1, 1, 2, 2, 0, 0} << false;
    QTest::newRow("resnet8 s3") << reference::Conv{128, 7, 7, 64, 64, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv1") << reference::Conv{128, 28, 28, 1, 32, 3, 3, 1, 1, 1, 1} << false;
    QTest::newRow("cnn-bn conv2") << reference::Conv{128, 28, 28, 32, 32, 3, 3, 1, 1, 1, 1}
                                  << false;
    QTest::newRow("cnn-bn conv3") << reference::Conv{128, 14, 14, 32, 64, 3, 3, 1, 1, 1, 1}
                                  << false;
    QTest::newRow("cnn-bn conv4") << reference::Conv{128, 14, 14, 64, 64, 3, 3, 1, 1, 1, 1}
                                  << false;
    QTest::newRow("last batch 96")
        << reference::Conv{96, 14, 14, 32, 32, 3, 3, 1, 1, 1, 1} << false;
  }
  void modelShapesUseFastImplementations() {
    QFETCH(reference::Conv, conv);
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
    const reference::Conv convs[] = {{4, 12, 12, 6, 16, 3, 3, 1, 1, 1, 1},
                                     {3, 9, 9, 16, 8, 5, 5, 2, 2, 2, 2},
                                     {2, 13, 11, 3, 32, 1, 3, 1, 2, 0, 1}};
    constexpr int kThreads = 6;
    std::vector<std::unique_ptr<ConvSetup>> setups;
    for (int t = 0; t < kThreads; ++t)
      setups.push_back(std::make_unique<ConvSetup>(convs[t % 3], t % 2 == 0,
                                                   100 + static_cast<unsigned>(t % 3)));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    const GraphNode node = node_with(0);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        ConvSetup& s = *setups[static_cast<size_t>(t)];
        for (int r = 0; r < 20; ++r) {
          cpu::conv_fwd(s.fwd_args());
          cpu::conv_bwd(s.bwd_args(&node));
          const double e =
              std::max({rel_error(s.h.f32(s.y), s.c.fwd(s.h.f32(s.x), s.h.f32(s.w),
                                                        s.bias ? s.h.f32(s.b) : nullptr)),
                        rel_error(s.h.f32(s.dw), s.c.dw(s.h.f32(s.x), s.h.f32(s.dy))),
                        rel_error(s.h.f32(s.dx), s.c.dx(s.h.f32(s.w), s.h.f32(s.dy)))});
          if (!(e < kRefTolerance)) ++failures;
        }
      });
    for (std::thread& t : threads) t.join();
    QCOMPARE(failures.load(), 0);
  }

  void badArgumentsAreReportedWithTheLayer() {
    const reference::Conv conv{1, 6, 6, 3, 4, 3, 3, 1, 1, 1, 1};
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
    LinearSetup l(Shape{2, 2, 2, 3}, 4, false, 9);
    const size_t bad_w = l.h.tensor({4, 1, 1, 11});
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             cpu::linear_fwd(l.h.args({l.x, bad_w}, {l.y}, nullptr, &l.layer)));
  }
};

QTEST_APPLESS_MAIN(TestCpuDenseKernels)
#include "test_cpu_dense_kernels.moc"

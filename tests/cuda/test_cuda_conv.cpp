// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CUDA convolution (cuDNN): the refusal of bad
// operands (no device needed), the backward in place and without dx, and the
// same bits on every run (deterministic algorithms preferred, each
// geometry's choice made once). Outputs start random, so a part that writes what it should
// not shows. Every part's values against a double-precision reference, in
// FP32, TF32 and FP16: engine.backend_ops.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/cuda/conv_launchers.h"
#include "backends/cuda/linear_launchers.h"
#include "backends/cuda/stream_handles.h"
#include "compute_mirror.h"
#include "cuda_test_util.h"
#include "tensor_compare.h"

using namespace tr;
using tr::test::ComputeMirror;
using tr::test::differs;
using tr::test::far;
using tr::test::node_for;

namespace {

constexpr double kStrict = 1e-5;
constexpr double kTf32 = 5e-3;
constexpr double kBiasGrad = 1e-6;

struct Size {
  Shape x;  // NHWC input
  int64_t co, k, stride, pad;
  int64_t groups = 1;
};

Shape out_shape(const Size& s) {
  const int64_t ho = (s.x.h + 2 * s.pad - s.k) / s.stride + 1;
  const int64_t wo = (s.x.w + 2 * s.pad - s.k) / s.stride + 1;
  return {s.x.n, ho, wo, s.co};
}

LayerNode conv_layer(const Size& s) {
  LayerNode l;
  l.id = "conv";
  l.type = LayerType::Conv2d;
  l.params.out_channels = s.co;
  l.params.kernel_h = l.params.kernel_w = s.k;
  l.params.stride_h = l.params.stride_w = s.stride;
  l.params.pad_h = l.params.pad_w = s.pad;
  l.params.groups = s.groups;
  return l;
}

// A 1x1 on one pixel; LeNet-like 5x5 on 3 channels; odd channels with a
// stride and padding that leave a ragged edge; a ResNet-like 3x3 stride 2;
// a 1x1 projection; grouped (2 groups) and depthwise (with a channel multiplier of 2).
const Size kSizes[] = {{{1, 1, 1, 1}, 1, 1, 1, 0},        {{3, 12, 12, 3}, 6, 5, 1, 0},
                       {{2, 9, 7, 5}, 7, 3, 2, 1},        {{4, 8, 8, 16}, 32, 3, 2, 1},
                       {{2, 6, 6, 24}, 8, 1, 1, 0},       {{2, 9, 9, 8}, 16, 3, 1, 1, 2},
                       {{2, 10, 10, 12}, 24, 3, 2, 1, 12}};

QByteArray name(const char* what, const Size& s, const QByteArray& variant = {}) {
  return QByteArray(what) + " " + QByteArray::fromStdString(s.x.str()) + " k" +
         QByteArray::number(qlonglong(s.k)) + "s" + QByteArray::number(qlonglong(s.stride)) + "p" +
         QByteArray::number(qlonglong(s.pad)) + "->" + QByteArray::number(qlonglong(s.co)) +
         (s.groups > 1 ? " g" + QByteArray::number(qlonglong(s.groups)) : QByteArray()) + " " +
         variant;
}

// A layer's tensors, each random, and a handle owner for the mirror's stream,
// as the backend has per stream.
struct Layer {
  ComputeMirror m;
  cuda::StreamHandles handles{0};
  LayerNode layer;
  size_t x, w, b, y, dy, dw, db, dx;

  Layer(const Size& s, uint32_t seed) : layer(conv_layer(s)) {
    handles.adopt(m.stream());
    const Shape ys = out_shape(s);
    x = m.tensor(s.x);
    w = m.tensor({s.co, s.k, s.k, s.x.c / s.groups});
    b = m.tensor({1, 1, 1, s.co});
    y = m.tensor(ys);
    dy = m.tensor(ys);
    dw = m.tensor({s.co, s.k, s.k, s.x.c / s.groups});
    db = m.tensor({1, 1, 1, s.co});
    dx = m.tensor(s.x);
    std::mt19937 rng(seed);
    for (size_t t : {x, w, b, y, dy, dw, db, dx}) m.fill(t, rng);
  }
};

// A layer as an AMP plan lays it out: FP16 features and gradient slots with
// padded rows (the input buffer's for a first layer), compact FP16 weights,
// bias and their gradients; NaN planted in every padding lane.
struct HalfLayer {
  ComputeMirror m;
  cuda::StreamHandles handles{0};
  LayerNode layer;
  size_t x, w, b, y, dy, dw, db, dx;

  HalfLayer(const Size& s, uint32_t seed, bool first = false) : layer(conv_layer(s)) {
    handles.adopt(m.stream());
    constexpr DType h = DType::FP16;
    const Shape ys = out_shape(s);
    x = m.tensor(s.x, h, first ? Region::I_A_DATA : Region::F_FEATURE_FP16);
    w = m.tensor({s.co, s.k, s.k, s.x.c / s.groups}, h, Region::A_DEEP_CONV);
    b = m.tensor({1, 1, 1, s.co}, h, Region::A_DEEP_CONV);
    y = m.tensor(ys, h, Region::F_FEATURE_FP16);
    dy = m.tensor(ys, h, Region::F_GRAD_SLOT_FP16);
    dw = m.tensor({s.co, s.k, s.k, s.x.c / s.groups}, h, Region::H_DEEP_CONV);
    db = m.tensor({1, 1, 1, s.co}, h, Region::H_DEEP_CONV);
    dx = m.tensor(s.x, h, Region::F_GRAD_SLOT_FP16);
    std::mt19937 rng(seed);
    for (size_t t : {x, w, b, y, dy, dw, db, dx}) {
      m.fill_half(t, rng);
      m.poison_padding(t);
    }
  }

  QString far(size_t t, const QByteArray& what) {
    double peak = 0;
    for (int64_t i = 0; i < m.elements(t); ++i)
      peak = std::max(peak, std::fabs(double(m.half(t, i))));
    return m.half_mismatch(t, what.constData(), 2, 1e-3 * peak);
  }
};

struct StrictFp32 {
  StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::STRICT); }
  ~StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::TF32); }
};

}  // namespace

class TestCudaConv : public QObject {
  Q_OBJECT

 private slots:
  // ---- no device needed ---------------------------------------------------

  // Operands are checked on the host, before any CUDA or cuDNN call.
  void rejectsBadOperands() {
    const Size s{{2, 8, 8, 3}, 4, 3, 1, 1};
    const LayerNode layer = conv_layer(s);
    DTensor x, w, y;
    x.shape = s.x;
    w.shape = {4, 3, 3, 3};
    y.shape = {2, 8, 8, 4};
    float dummy[1] = {};
    GraphNode n = node_for(ComputeOp::CONV_FWD);
    KernelArgs a;
    a.node = &n;
    a.layer_params = test::resolved(layer);
    a.in = {{dummy, &x}, {dummy, &w}};
    a.out = {{dummy, &y}};
    y.shape = {2, 7, 8, 4};  // wrong output height
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::conv::fwd(a, nullptr));
    y.shape = {2, 8, 8, 4};
    w.shape = {4, 3, 3, 2};  // channels do not match the input
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::conv::fwd(a, nullptr));
    w.shape = {4, 3, 3, 3};
    y.dtype = DType::FP16;  // mixed dtypes
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::conv::fwd(a, nullptr));
    y.dtype = DType::INT32;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::conv::fwd(a, nullptr));
    y.dtype = DType::FP32;
    a.layer_params = nullptr;  // stride and padding come from the layer
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::conv::fwd(a, nullptr));
    // Malformed operands ask for no workspace: the launch reports them.
    y.shape = {2, 7, 8, 4};
    a.layer_params = test::resolved(layer);
    QCOMPARE(cuda::conv::workspace_bytes(a, nullptr), uint64_t{0});
  }

  // ---- against the CPU twin -----------------------------------------------

  // dx over x itself (dW reads X before dX overwrites it), and no dx slot.
  void backwardInPlaceAndWithoutDx() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    for (const Size& s : kSizes) {
      Layer l(s, 34);
      GraphNode n = node_for(ComputeOp::CONV_BWD);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.x}, &n, &l.layer);
          },
          ComputeOp::CONV_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "in place").data(), kStrict));
      EXPECT_NONE(far(l.m, l.x, name("dx", s, "in place").data(), kStrict));
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, ComputeMirror::kAbsent}, &n,
                            &l.layer);
          },
          ComputeOp::CONV_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "no dx").data(), kStrict));
      EXPECT_NONE(differs(l.m, l.dx, name("dx", s, "no dx").data()));
    }
  }

  // ---- determinism -------------------------------------------------------

  // The same inputs give the same bits on every run: deterministic
  // algorithms are preferred, and the choice is made once per geometry.
  // Bit for bit with deterministic algorithms only: the default takes
  // cuDNN's fastest, which for dW may sum in any order.
  void repeatable() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Deterministic {
      Deterministic() {
        cuda::conv::set_conv_algorithms(cuda::conv::ConvAlgorithms::DETERMINISTIC);
      }
      ~Deterministic() { cuda::conv::set_conv_algorithms(cuda::conv::ConvAlgorithms::FASTEST); }
    } deterministic;
    const Size s = kSizes[3];
    Layer l(s, 36);
    GraphNode n = node_for(ComputeOp::CONV_BWD);
    auto make = [&](bool d) {
      return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.dx}, &n, &l.layer);
    };
    l.m.run(make, ComputeOp::CONV_BWD);
    const std::vector<uint8_t> first(l.m.gpu_bytes(l.dw), l.m.gpu_bytes(l.dw) + l.m.bytes(l.dw));
    l.m.run(make, ComputeOp::CONV_BWD);
    QVERIFY(std::equal(first.begin(), first.end(), l.m.gpu_bytes(l.dw)));
  }
};

QTEST_GUILESS_MAIN(TestCudaConv)
#include "test_cuda_conv.moc"

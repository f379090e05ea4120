// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA convolution (cuDNN) against its CPU twin (oneDNN): the same random
// tensors through CONV_FWD, every part of CONV_BWD, CONV_BWD_FIRST,
// accumulating and in-place variants, on shapes with odd sizes, strides and
// paddings. Outputs start random, so a part that writes what it should not,
// or overwrites where it should add, shows.
// Tolerances, relative to the largest CPU value of the tensor:
//  - strict FP32 (Fp32Gemm::STRICT, cuDNN's FMA math): 1e-5, float sums in
//    another order (at most 5*5*16 = 400 terms);
//  - TF32 (the default): 5e-3, operands rounded to 10 mantissa bits;
//  - bias gradient: 1e-6 (double sums on the device, float partials on the CPU);
//  - FP16 (AMP: features and gradients with channels padded to 8, the input
//    buffer's to 4, NaN planted in every padding lane; FP32 accumulation on
//    both sides): within 2 half ulps or 1e-3 of the tensor's largest value
//    (cuDNN may pick a Winograd or FFT algorithm, whose transforms round),
//    every output padding lane zero;
//  - outputs a part must not touch: bit for bit.
// The table and operand checks need no device; the rest skip without one.
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

  void tableHasConvKernels() {
    for (ComputeOp op : {ComputeOp::CONV_FWD, ComputeOp::CONV_BWD, ComputeOp::CONV_BWD_FIRST})
      QVERIFY2(cuda::cuda_compute_kernel(op), compute_op_name(op).data());
    // The bias gradient alone runs no cuDNN algorithm, so it asks for no workspace.
    GraphNode n = node_for(ComputeOp::CONV_BWD);
    KernelArgs a;
    a.node = &n;
    a.part = static_cast<int>(BwdPart::DB);
    QCOMPARE(cuda::conv::workspace_bytes(a, nullptr), uint64_t{0});
    // Not a convolution: no cuDNN workspace either.
    GraphNode relu = node_for(ComputeOp::RELU_FWD);
    a.node = &relu;
    a.part = -1;
    QCOMPARE(cuda::conv::workspace_bytes(a, nullptr), uint64_t{0});
  }

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

  void forward() {
    TR_REQUIRE_CUDA_DEVICE();
    for (bool strict : {true, false}) {
      std::unique_ptr<StrictFp32> mode;
      if (strict) mode = std::make_unique<StrictFp32>();
      for (const Size& s : kSizes)
        for (bool bias : {true, false}) {
          Layer l(s, 31);
          GraphNode n = node_for(ComputeOp::CONV_FWD);
          std::vector<size_t> ins{l.x, l.w};
          if (bias) ins.push_back(l.b);
          l.m.run([&](bool d) { return l.m.args(d, ins, {l.y}, &n, &l.layer); },
                  ComputeOp::CONV_FWD);
          const QByteArray v = QByteArray(bias ? "bias" : "no bias") + (strict ? " fp32" : " tf32");
          EXPECT_NONE(far(l.m, l.y, name("y", s, v).data(), strict ? kStrict : kTf32));
        }
    }
  }

  // The whole op (part -1) and each forked part alone, with and without a bias.
  void backwardParts() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    for (const Size& s : kSizes)
      for (bool bias : {true, false})
        for (int part : {-1, int(BwdPart::DW), int(BwdPart::DB), int(BwdPart::DX)}) {
          if (!bias && part == int(BwdPart::DB)) continue;
          Layer l(s, 32);
          GraphNode n = node_for(ComputeOp::CONV_BWD);
          std::vector<size_t> outs{l.dw, l.dx};
          if (bias) outs = {l.dw, l.db, l.dx};
          auto make = [&](bool d) {
            KernelArgs a = l.m.args(d, {l.x, l.w, l.dy}, outs, &n, &l.layer);
            a.part = part;
            return a;
          };
          l.m.run(make, ComputeOp::CONV_BWD);
          const QByteArray v = QByteArray("part ") + QByteArray::number(part);
          const bool all = part < 0;
          const auto check = [&](size_t t, const char* what, bool runs, double rel) {
            if (runs)
              EXPECT_NONE(far(l.m, t, name(what, s, v).data(), rel));
            else
              EXPECT_NONE(differs(l.m, t, name(what, s, v).data()));
          };
          check(l.dw, "dw", all || part == int(BwdPart::DW), kStrict);
          check(l.db, "db", bias && (all || part == int(BwdPart::DB)), kBiasGrad);
          check(l.dx, "dx", all || part == int(BwdPart::DX), kStrict);
          check(l.x, "x", false, 0);
          if (QTest::currentTestFailed()) return;
        }
  }

  // dx adds onto what it holds when its bit is set; dw and db are overwritten.
  void backwardAccumulate() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    for (const Size& s : kSizes) {
      Layer l(s, 33);
      GraphNode n = node_for(ComputeOp::CONV_BWD, 0b111);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.dx}, &n, &l.layer);
          },
          ComputeOp::CONV_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "accumulate").data(), kStrict));
      EXPECT_NONE(far(l.m, l.db, name("db", s, "accumulate").data(), kBiasGrad));
      EXPECT_NONE(far(l.m, l.dx, name("dx", s, "accumulate").data(), kStrict));
    }
  }

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

  void firstLayer() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    for (const Size& s : kSizes)
      for (bool bias : {true, false})
        for (int part : {-1, int(BwdPart::DW), int(BwdPart::DB)}) {
          if (!bias && part == int(BwdPart::DB)) continue;
          Layer l(s, 35);
          GraphNode n = node_for(ComputeOp::CONV_BWD_FIRST, 0b11);
          std::vector<size_t> outs{l.dw};
          if (bias) outs.push_back(l.db);
          auto make = [&](bool d) {
            KernelArgs a = l.m.args(d, {l.x, l.dy}, outs, &n, &l.layer);
            a.part = part;
            return a;
          };
          l.m.run(make, ComputeOp::CONV_BWD_FIRST);
          const QByteArray v = QByteArray("first, part ") + QByteArray::number(part);
          if (part != int(BwdPart::DB))
            EXPECT_NONE(far(l.m, l.dw, name("dw", s, v).data(), kStrict));
          else
            EXPECT_NONE(differs(l.m, l.dw, name("dw", s, v).data()));
          if (bias && part != int(BwdPart::DW))
            EXPECT_NONE(far(l.m, l.db, name("db", s, v).data(), kBiasGrad));
          else
            EXPECT_NONE(differs(l.m, l.db, name("db", s, v).data()));
        }
  }

  // ---- FP16 (AMP) ---------------------------------------------------------

  void fp16Forward() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const Size& s : kSizes)
      for (bool bias : {true, false}) {
        HalfLayer l(s, 41);
        GraphNode n = node_for(ComputeOp::CONV_FWD);
        std::vector<size_t> ins{l.x, l.w};
        if (bias) ins.push_back(l.b);
        l.m.run([&](bool d) { return l.m.args(d, ins, {l.y}, &n, &l.layer); }, ComputeOp::CONV_FWD);
        EXPECT_NONE(l.far(l.y, name("fp16 y", s, bias ? "bias" : "no bias")));
      }
  }

  // Each part alone and all together; dx overwritten and accumulated.
  void fp16Backward() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const Size& s : kSizes)
      for (int part : {-1, int(BwdPart::DW), int(BwdPart::DB), int(BwdPart::DX)})
        for (bool acc : {false, true}) {
          HalfLayer l(s, 42);
          GraphNode n = node_for(ComputeOp::CONV_BWD, acc ? uint8_t{0b100} : uint8_t{0});
          auto make = [&](bool d) {
            KernelArgs a = l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.dx}, &n, &l.layer);
            a.part = part;
            return a;
          };
          l.m.run(make, ComputeOp::CONV_BWD);
          const QByteArray v =
              QByteArray("fp16 part ") + QByteArray::number(part) + (acc ? " accumulate" : "");
          const bool all = part < 0;
          const auto check = [&](size_t t, const char* what, bool runs) {
            if (runs)
              EXPECT_NONE(l.far(t, name(what, s, v)));
            else
              EXPECT_NONE(differs(l.m, t, name(what, s, v).data()));
          };
          check(l.dw, "dw", all || part == int(BwdPart::DW));
          check(l.db, "db", all || part == int(BwdPart::DB));
          check(l.dx, "dx", all || part == int(BwdPart::DX));
          if (QTest::currentTestFailed()) return;
        }
  }

  // The input buffer's rows (channels padded to 4) into the first layer.
  void fp16FirstLayer() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const Size& s : {Size{{4, 12, 12, 3}, 6, 5, 1, 0}, Size{{2, 15, 15, 3}, 16, 7, 2, 3}}) {
      HalfLayer l(s, 43, true);
      GraphNode f = node_for(ComputeOp::CONV_FWD);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.b}, {l.y}, &f, &l.layer);
          },
          ComputeOp::CONV_FWD);
      EXPECT_NONE(l.far(l.y, name("fp16 first y", s)));
      GraphNode n = node_for(ComputeOp::CONV_BWD_FIRST);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.dy}, {l.dw, l.db}, &n, &l.layer);
          },
          ComputeOp::CONV_BWD_FIRST);
      EXPECT_NONE(l.far(l.dw, name("fp16 first dw", s)));
      EXPECT_NONE(l.far(l.db, name("fp16 first db", s)));
    }
  }

  // The same inputs give the same bits on every run: deterministic
  // algorithms are preferred, and the choice is made once per geometry.
  void repeatable() {
    TR_REQUIRE_CUDA_DEVICE();
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

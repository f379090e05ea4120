// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA linear layer (cuBLAS GEMMs, our bias kernels) against its CPU
// twin: the same random tensors through LINEAR_FWD, every part of
// LINEAR_BWD, LINEAR_BWD_FIRST, accumulating and in-place variants, on
// sizes no vector width divides. Outputs start random, so a part that
// writes what it should not, or overwrites where it should add, shows.
// Tolerances, relative to the largest CPU value of the tensor (GEMM sums
// cancel, so a per-element relative bound would be meaningless near zero):
//  - strict FP32 GEMMs (Fp32Gemm::STRICT): 1e-5, for float sums in another
//    order (K <= 400: a few float epsilons times sqrt(K));
//  - TF32 (the default): 5e-3, for operands rounded to 10 mantissa bits;
//  - bias gradient: 1e-6 (double sums on both sides; the CPU folds float
//    partials of up to 64 rows), and the same bits on every run;
//  - outputs a part must not touch: bit for bit.
// The table, operand and stream checks need no device; the rest skip without one.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "backends/cuda/cublas_handles.h"
#include "backends/cuda/linear_launchers.h"
#include "compute_mirror.h"
#include "cuda_test_util.h"

using namespace tr;
using tr::test::ComputeMirror;

namespace {

constexpr double kStrict = 1e-5;
constexpr double kTf32 = 5e-3;
constexpr double kBiasGrad = 1e-6;

GraphNode node_for(ComputeOp op, uint8_t accumulate_mask = 0) {
  GraphNode n;
  n.kind = NodeKind::COMPUTE;
  n.op = op;
  n.layer = 3;
  n.accumulate_mask = accumulate_mask;
  return n;
}

LayerNode linear_layer() {
  LayerNode l;
  l.id = "fc";
  l.type = LayerType::Linear;
  return l;
}

// Empty when every float is within rel * max|CPU| of the CPU (plus a tiny
// floor for an all-zero tensor).
QString far(ComputeMirror& m, size_t t, const char* what, double rel) {
  double scale = 0;
  for (int64_t i = 0; i < m.elements(t); ++i)
    scale = std::max(scale, std::fabs(double(m.f32(t)[i])));
  const double tol = rel * scale + 1e-7;
  for (int64_t i = 0; i < m.elements(t); ++i) {
    const double g = m.gpu_f32(t)[i], c = m.f32(t)[i];
    if (!(std::fabs(g - c) <= tol))
      return QString("%1: float %2 of %3 differs: device %4, CPU %5 (tolerance %6)")
          .arg(what)
          .arg(i)
          .arg(m.elements(t))
          .arg(g, 0, 'g', 9)
          .arg(c, 0, 'g', 9)
          .arg(tol, 0, 'g', 3);
  }
  return {};
}

// Empty when the device's slot equals the CPU's byte for byte.
QString differs(const ComputeMirror& m, size_t t, const char* what) {
  if (std::memcmp(m.gpu_bytes(t), m.cpu_bytes(t), m.bytes(t)) == 0) return {};
  return QString("%1: changed by a part that must not write it, or differs").arg(what);
}

#define EXPECT_NONE(diff)                   \
  do {                                      \
    const QString e_ = (diff);              \
    QVERIFY2(e_.isEmpty(), qPrintable(e_)); \
  } while (0)

// A layer's tensors, each random (outputs too: what an accumulating part
// adds onto, and what a part that does not run must leave alone), and a
// cuBLAS handle owner for the mirror's stream, as the backend has per stream.
struct Layer {
  ComputeMirror m;
  cuda::CublasHandles blas{0};
  size_t x, w, b, y, dy, dw, db, dx;

  Layer(const Shape& xs, int64_t o, uint32_t seed) {
    blas.adopt(m.stream());
    const int64_t k = xs.per_sample();
    x = m.tensor(xs);
    w = m.tensor({o, 1, 1, k});
    b = m.tensor({1, 1, 1, o});
    y = m.tensor({xs.n, 1, 1, o});
    dy = m.tensor({xs.n, 1, 1, o});
    dw = m.tensor({o, 1, 1, k});
    db = m.tensor({1, 1, 1, o});
    dx = m.tensor(xs);
    std::mt19937 rng(seed);
    for (size_t t : {x, w, b, y, dy, dw, db, dx}) m.fill(t, rng);
  }
};

struct Size {
  Shape x;  // NHWC input; read as [N, H*W*C]
  int64_t o;
};

// Batch, K and O off every multiple of 4 and 8 but one LeNet-like layer; a
// 3x3x7 input read flat; a single sample with a single feature.
const Size kSizes[] = {{{1, 1, 1, 1}, 1},
                       {{7, 1, 1, 13}, 5},
                       {{33, 3, 3, 7}, 10},
                       {{129, 1, 1, 257}, 67},
                       {{128, 1, 1, 400}, 120}};

QByteArray name(const char* what, const Size& s, const char* variant = "") {
  return QByteArray(what) + " " + QByteArray::fromStdString(s.x.str()) + "->" +
         QByteArray::number(qlonglong(s.o)) + " " + variant;
}

// Restores the default (TF32) after a test that asked for strict FP32.
struct StrictFp32 {
  StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::STRICT); }
  ~StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::TF32); }
};

}  // namespace

class TestCudaLinear : public QObject {
  Q_OBJECT

 private slots:
  // ---- no device needed ---------------------------------------------------

  void tableHasLinearKernels() {
    for (ComputeOp op : {ComputeOp::LINEAR_FWD, ComputeOp::LINEAR_BWD, ComputeOp::LINEAR_BWD_FIRST})
      QVERIFY2(cuda::cuda_compute_kernel(op), compute_op_name(op).data());
    QCOMPARE(cuda::fp32_gemm(), cuda::Fp32Gemm::TF32);  // the default for FP32
    // The bias gradient alone runs no GEMM, so it asks for no cuBLAS workspace.
    GraphNode n = node_for(ComputeOp::LINEAR_BWD);
    KernelArgs a;
    a.node = &n;
    a.part = static_cast<int>(BwdPart::DB);
    QCOMPARE(cuda::cuda_workspace_bytes(a), uint64_t{0});
  }

  // Operands are checked on the host, before any CUDA call.
  void rejectsFp16AndStreamsWithoutHandles() {
    DTensor x, w, y;
    x.shape = {4, 1, 1, 8};
    w.shape = {3, 1, 1, 8};
    y.shape = {4, 1, 1, 3};
    float dummy[1] = {};
    GraphNode n = node_for(ComputeOp::LINEAR_FWD);
    KernelArgs a;
    a.node = &n;
    a.in = {{dummy, &x}, {dummy, &w}};
    a.out = {{dummy, &y}};
    // No CublasHandles adopted the legacy stream: a clear error, not a crash.
    QVERIFY_THROWS_EXCEPTION(std::logic_error, cuda::linear::fwd(a, nullptr));
    x.dtype = DType::FP16;
    QVERIFY_THROWS_EXCEPTION(std::logic_error, cuda::linear::fwd(a, nullptr));
    x.dtype = DType::FP32;
    y.shape = {4, 1, 1, 5};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::linear::fwd(a, nullptr));
  }

  // ---- against the CPU twin -----------------------------------------------

  void forward() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    for (const Size& s : kSizes)
      for (bool bias : {true, false}) {
        Layer l(s.x, s.o, 21);
        const LayerNode layer = linear_layer();
        GraphNode n = node_for(ComputeOp::LINEAR_FWD);
        std::vector<size_t> ins{l.x, l.w};
        if (bias) ins.push_back(l.b);
        l.m.run([&](bool d) { return l.m.args(d, ins, {l.y}, &n, &layer); }, ComputeOp::LINEAR_FWD);
        EXPECT_NONE(far(l.m, l.y, name("y", s, bias ? "bias" : "no bias").data(), kStrict));
      }
  }

  // The whole op (part -1) and each forked part alone, with and without a bias.
  void backwardParts() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    const LayerNode layer = linear_layer();
    for (const Size& s : kSizes)
      for (bool bias : {true, false})
        for (int part : {-1, int(BwdPart::DW), int(BwdPart::DB), int(BwdPart::DX)}) {
          if (!bias && part == int(BwdPart::DB)) continue;
          Layer l(s.x, s.o, 22);
          GraphNode n = node_for(ComputeOp::LINEAR_BWD);
          std::vector<size_t> outs{l.dw, l.dx};
          if (bias) outs = {l.dw, l.db, l.dx};
          auto make = [&](bool d) {
            KernelArgs a = l.m.args(d, {l.x, l.w, l.dy}, outs, &n, &layer);
            a.part = part;
            return a;
          };
          l.m.run(make, ComputeOp::LINEAR_BWD);
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

  // Every accumulate bit set: dx adds onto what it holds, while dw and db
  // are overwritten, as the CPU twin does (weight gradients never accumulate).
  void backwardAccumulate() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    const LayerNode layer = linear_layer();
    for (const Size& s : kSizes)
      for (uint8_t mask : {uint8_t{0b100}, uint8_t{0b111}}) {
        Layer l(s.x, s.o, 23);
        GraphNode n = node_for(ComputeOp::LINEAR_BWD, mask);
        l.m.run(
            [&](bool d) {
              return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.dx}, &n, &layer);
            },
            ComputeOp::LINEAR_BWD);
        EXPECT_NONE(far(l.m, l.dw, name("dw", s, "accumulate").data(), kStrict));
        EXPECT_NONE(far(l.m, l.db, name("db", s, "accumulate").data(), kBiasGrad));
        EXPECT_NONE(far(l.m, l.dx, name("dx", s, "accumulate").data(), kStrict));
        // Without a bias dx is the second output: bit 1.
        GraphNode nb = node_for(ComputeOp::LINEAR_BWD, 0b10);
        l.m.run(
            [&](bool d) {
              return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.dx}, &nb, &layer);
            },
            ComputeOp::LINEAR_BWD);
        EXPECT_NONE(far(l.m, l.dx, name("dx", s, "accumulate, no bias").data(), kStrict));
      }
  }

  // dx over x itself (ENGINE.md §4: dW reads X before dX overwrites it), and
  // no dx slot at all (a layer fed by the input node).
  void backwardInPlaceAndWithoutDx() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    const LayerNode layer = linear_layer();
    for (const Size& s : kSizes) {
      Layer l(s.x, s.o, 24);
      GraphNode n = node_for(ComputeOp::LINEAR_BWD);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.x}, &n, &layer);
          },
          ComputeOp::LINEAR_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "in place").data(), kStrict));
      EXPECT_NONE(far(l.m, l.x, name("dx", s, "in place").data(), kStrict));
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, ComputeMirror::kAbsent}, &n, &layer);
          },
          ComputeOp::LINEAR_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "no dx").data(), kStrict));
      EXPECT_NONE(far(l.m, l.db, name("db", s, "no dx").data(), kBiasGrad));
      EXPECT_NONE(differs(l.m, l.dx, name("dx", s, "no dx").data()));
    }
  }

  void firstLayer() {
    TR_REQUIRE_CUDA_DEVICE();
    StrictFp32 strict;
    const LayerNode layer = linear_layer();
    for (const Size& s : kSizes)
      for (bool bias : {true, false})
        for (int part : {-1, int(BwdPart::DW), int(BwdPart::DB)}) {
          Layer l(s.x, s.o, 25);
          // Accumulate bits as well: the first layer's gradients overwrite.
          GraphNode n = node_for(ComputeOp::LINEAR_BWD_FIRST, 0b11);
          std::vector<size_t> outs{l.dw};
          if (bias) outs.push_back(l.db);
          auto make = [&](bool d) {
            KernelArgs a = l.m.args(d, {l.x, l.dy}, outs, &n, &layer);
            a.part = part;
            return a;
          };
          l.m.run(make, ComputeOp::LINEAR_BWD_FIRST);
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

  // The bias gradient is a fixed-order sum: the same bits at every run.
  void biasGradientIsDeterministic() {
    TR_REQUIRE_CUDA_DEVICE();
    const LayerNode layer = linear_layer();
    Layer l({1000, 1, 1, 3}, 77, 26);
    GraphNode n = node_for(ComputeOp::LINEAR_BWD_FIRST);
    auto make = [&](bool d) {
      KernelArgs a = l.m.args(d, {l.x, l.dy}, {l.dw, l.db}, &n, &layer);
      a.part = int(BwdPart::DB);
      return a;
    };
    l.m.run(make, ComputeOp::LINEAR_BWD_FIRST);
    std::vector<float> first(l.m.gpu_f32(l.db), l.m.gpu_f32(l.db) + l.m.elements(l.db));
    l.m.run(make, ComputeOp::LINEAR_BWD_FIRST);
    QVERIFY(std::memcmp(first.data(), l.m.gpu_f32(l.db), first.size() * 4) == 0);
    EXPECT_NONE(far(l.m, l.db, "db, 1000 rows", kBiasGrad));
  }

  // The default TF32 GEMMs, within TF32's rounding.
  void tf32ByDefault() {
    TR_REQUIRE_CUDA_DEVICE();
    const LayerNode layer = linear_layer();
    for (const Size& s : kSizes) {
      Layer l(s.x, s.o, 27);
      GraphNode f = node_for(ComputeOp::LINEAR_FWD);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.b}, {l.y}, &f, &layer);
          },
          ComputeOp::LINEAR_FWD);
      EXPECT_NONE(far(l.m, l.y, name("y", s, "tf32").data(), kTf32));
      GraphNode b = node_for(ComputeOp::LINEAR_BWD, 0b100);
      l.m.run(
          [&](bool d) {
            return l.m.args(d, {l.x, l.w, l.dy}, {l.dw, l.db, l.dx}, &b, &layer);
          },
          ComputeOp::LINEAR_BWD);
      EXPECT_NONE(far(l.m, l.dw, name("dw", s, "tf32").data(), kTf32));
      EXPECT_NONE(far(l.m, l.db, name("db", s, "tf32").data(), kBiasGrad));
      EXPECT_NONE(far(l.m, l.dx, name("dx", s, "tf32").data(), kTf32));
    }
  }
};

QTEST_GUILESS_MAIN(TestCudaLinear)
#include "test_cuda_linear.moc"

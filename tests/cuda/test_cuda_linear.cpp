// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CUDA linear layer (cuBLAS GEMMs, our bias
// kernels): the refusal of mixed dtypes and of streams without handles (no
// device needed), the backward in place and without dx, a bias gradient with
// the same bits on every run, and TF32 as the default FP32 math. Every part's
// values against a double-precision reference, in FP32, TF32 and FP16:
// engine.backend_ops.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

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

LayerNode linear_layer() {
  LayerNode l;
  l.id = "fc";
  l.type = LayerType::Linear;
  return l;
}

// A layer's tensors, each random (outputs too: what an accumulating part
// adds onto, and what a part that does not run must leave alone), and a
// cuBLAS handle owner for the mirror's stream, as the backend has per stream.
struct Layer {
  ComputeMirror m;
  cuda::StreamHandles handles{0};
  size_t x, w, b, y, dy, dw, db, dx;

  Layer(const Shape& xs, int64_t o, uint32_t seed) {
    handles.adopt(m.stream());
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

// A layer as an AMP plan lays it out: FP16 features and gradient slots with
// padded rows (the input buffer's for a first layer), compact FP16 weights,
// bias and their gradients; NaN planted in every padding lane.
struct HalfLayer {
  ComputeMirror m;
  cuda::StreamHandles handles{0};
  size_t x, w, b, y, dy, dw, db, dx;

  HalfLayer(const Shape& xs, int64_t o, uint32_t seed, bool first = false) {
    handles.adopt(m.stream());
    const int64_t k = xs.per_sample();
    constexpr DType h = DType::FP16;
    x = m.tensor(xs, h, first ? Region::I_A_DATA : Region::F_FEATURE_FP16);
    w = m.tensor({o, 1, 1, k}, h, Region::A_FC_WEIGHT);
    b = m.tensor({1, 1, 1, o}, h, Region::A_FC_BIAS);
    y = m.tensor({xs.n, 1, 1, o}, h);
    dy = m.tensor({xs.n, 1, 1, o}, h, Region::F_GRAD_SLOT_FP16);
    dw = m.tensor({o, 1, 1, k}, h, Region::H_FC_WEIGHT);
    db = m.tensor({1, 1, 1, o}, h, Region::H_FC_BIAS);
    dx = m.tensor(xs, h, Region::F_GRAD_SLOT_FP16);
    std::mt19937 rng(seed);
    for (size_t t : {x, w, b, y, dy, dw, db, dx}) {
      m.fill_half(t, rng);
      m.poison_padding(t);
    }
  }

  QString far(size_t t, const char* what, bool gemm = true) {
    double peak = 0;
    for (int64_t i = 0; i < m.elements(t); ++i)
      peak = std::max(peak, std::fabs(double(m.half(t, i))));
    return m.half_mismatch(t, what, 1, gemm ? 1e-4 * peak : 0.0);
  }
};

// Padded K (13 -> 16), a 3x3 sample of 7 padded channels (staged), a
// LeNet-like layer, one sample of one feature.
const Size kHalfSizes[] = {
    {{1, 1, 1, 1}, 1}, {{7, 1, 1, 13}, 5}, {{33, 3, 3, 7}, 10}, {{128, 1, 1, 400}, 120}};

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

  // Operands are checked on the host, before any CUDA call.
  void rejectsMixedDtypesAndStreamsWithoutHandles() {
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
    // No StreamHandles adopted the legacy stream: a clear error, not a crash.
    QVERIFY_THROWS_EXCEPTION(std::logic_error, cuda::linear::fwd(a, nullptr));
    // FP16 x with FP32 weights: no AMP plan mixes them.
    x.dtype = DType::FP16;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::linear::fwd(a, nullptr));
    // All FP16 passes the operand checks and reaches the missing handle.
    w.dtype = y.dtype = DType::FP16;
    try {
      cuda::linear::fwd(a, nullptr);
      QFAIL("the stream without a handle was not refused");
    } catch (const std::invalid_argument& e) {
      QFAIL(e.what());
    } catch (const std::logic_error&) {
    }
    x.dtype = w.dtype = y.dtype = DType::INT32;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::linear::fwd(a, nullptr));
    x.dtype = w.dtype = y.dtype = DType::FP32;
    y.shape = {4, 1, 1, 5};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, cuda::linear::fwd(a, nullptr));
  }

  // ---- against the CPU twin -----------------------------------------------

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

  // ---- determinism and defaults -------------------------------------------

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

// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA compute kernels of our own (activations, copies, add, dropout,
// pooling, softmax cross-entropy) against their CPU twins: the same random
// tensors run through the CPU kernel on the host and the CUDA kernel on the
// device. Tolerances:
//  - bit for bit (whole slots, padding included) for copies, labels, ReLU,
//    add, dropout masks and features, max pooling and its routed gradient,
//    and confusion counts and hit counts;
//  - 1e-5 relative (plus 1e-6 absolute, for results near zero after
//    cancellation) for Tanh and SiLU, whose exp/tanh differ from the CPU's
//    polynomials by a few ulp, for average pooling and GAP, and for any
//    accumulated result where the GPU may fuse the multiply-add the CPU
//    rounds twice;
//  - softmax CE: loss 1e-6 relative (double sums in another order, rounded
//    to float), gradient 1e-5 of its scale 1/N (expf within 2 ulp).
// FP16 operands (laid out as AMP lays them out: channels padded to 8, NaN
// planted in every input's padding lanes) against the CPU's FP32 staging,
// compared in half ulps, with every output padding lane zero on both sides:
//  - 0 ulps for ReLU, copies, flatten, add, dropout (masks byte for byte),
//    max pooling and its routed gradient, and the confusion counts;
//  - 1 ulp (the FP32 results differ by a few float ulps, which can flip one
//    rounding to half) for Tanh, SiLU, accumulating dropout, average pooling,
//    GAP and the softmax gradient, plus an absolute floor for results that
//    cancel to near zero, where a half ulp is tiny (1e-5 for activations and
//    pooling of values of order 1, 1e-6 for accumulating dropout, 1e-7 for
//    the softmax gradient);
//  - softmax CE loss and hits as in FP32 (both sides see the same halves).
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../engine/kernel_harness.h"
#include "compile/layer_lowering.h"
#include "compute_mirror.h"
#include "cuda_test_util.h"

using namespace tr;
using tr::test::ComputeMirror;
using tr::test::layer_with;
using tr::test::node_for;
using tr::test::square_window;

namespace {

constexpr double kRel = 1e-5;
constexpr double kAbs = 1e-6;

// Empty when the device's slot equals the CPU's byte for byte.
QString differs(const ComputeMirror& m, size_t t, const char* what) {
  const uint8_t* g = m.gpu_bytes(t);
  const uint8_t* c = m.cpu_bytes(t);
  for (uint64_t i = 0; i < m.bytes(t); ++i)
    if (g[i] != c[i])
      return QString("%1: byte %2 differs: device %3, CPU %4").arg(what).arg(i).arg(g[i]).arg(c[i]);
  return {};
}

QString far(ComputeMirror& m, size_t t, const char* what, double rel = kRel, double abs = kAbs) {
  return m.mismatch(t, what, rel, abs);
}

// A macro because QVERIFY2 must return from the test function itself.
#define EXPECT_NONE(diff)                   \
  do {                                      \
    const QString e_ = (diff);              \
    QVERIFY2(e_.isEmpty(), qPrintable(e_)); \
  } while (0)

// Inputs with the awkward values next to random ones: zeros of both signs
// (ReLU's threshold) and a NaN (must pass through, for the NaN check).
void fill_activation_input(ComputeMirror& m, size_t x, std::mt19937& rng) {
  m.fill(x, rng, -4.0f, 4.0f);
  m.f32(x)[0] = 0.0f;
  m.f32(x)[1] = -0.0f;
  m.f32(x)[2] = std::numeric_limits<float>::quiet_NaN();
}

int64_t pooled(int64_t size, int64_t k, int64_t s, int64_t p) {
  return (size + 2 * p - k) / s + 1;
}

// A feature or gradient slot under AMP: FP16, channels padded to 8.
constexpr DType kHalf = DType::FP16;

void fill_half(ComputeMirror& m, size_t t, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  m.fill_half(t, rng, lo, hi);
  m.poison_padding(t);
}

QString half_far(ComputeMirror& m, size_t t, const char* what, int ulps, double abs = 0.0) {
  return m.half_mismatch(t, what, ulps, abs);
}

// ReLU and every layer type of the activation family, as the compiler
// wires them (the family's sub-kind and LeakyReLU's slope through the layer).
struct ActivationCase {
  std::string name;
  ComputeOp fwd, bwd;
  bool bwd_reads_y;
  bool exact;  // a select (ReLU, ReLU6, LeakyReLU): bit for bit
  LayerNode layer;
};

std::vector<ActivationCase> activation_cases() {
  std::vector<ActivationCase> out;
  out.push_back({"RELU", ComputeOp::RELU_FWD, ComputeOp::RELU_BWD, false, true,
                 test::layer_with(LayerType::ReLU)});
  for (LayerType t : kAllLayerTypes) {
    const Activation f = layer_lowering(t).activation;
    if (f == Activation::NUM_ACTIVATIONS) continue;
    LayerParams p;
    p.negative_slope = 0.2;
    const bool select = f == Activation::RELU6 || f == Activation::LEAKY_RELU;
    out.push_back({std::string(layer_type_name(t)), ComputeOp::ACTIVATION_FWD,
                   ComputeOp::ACTIVATION_BWD, activation_backward_reads_output(f), select,
                   test::layer_with(t, p)});
  }
  return out;
}

}  // namespace

class TestCudaComputeKernels : public QObject {
  Q_OBJECT

 private slots:
  void tableHasTheseKernels() {
    TR_REQUIRE_CUDA_DEVICE();
    for (ComputeOp op :
         {ComputeOp::COPY_LABELS,    ComputeOp::RELU_FWD,       ComputeOp::RELU_BWD,
          ComputeOp::ACTIVATION_FWD, ComputeOp::ACTIVATION_BWD, ComputeOp::IDENTITY,
          ComputeOp::FLATTEN_FWD,    ComputeOp::FLATTEN_BWD,    ComputeOp::ADD_FWD,
          ComputeOp::ADD_BWD,        ComputeOp::CONCAT_FWD,     ComputeOp::CONCAT_BWD,
          ComputeOp::DROPOUT_FWD,    ComputeOp::DROPOUT_BWD,    ComputeOp::MAXPOOL_FWD,
          ComputeOp::MAXPOOL_BWD,    ComputeOp::AVGPOOL_FWD,    ComputeOp::AVGPOOL_BWD,
          ComputeOp::GAP_FWD,        ComputeOp::GAP_BWD,        ComputeOp::SOFTMAX_CE_FWD_BWD,
          ComputeOp::SOFTMAX_CE_FWD})
      QVERIFY2(cuda::cuda_compute_kernel(op), compute_op_name(op).data());
  }

  // ---- operand checks (host side, no device needed) ----------------------

  void mixedOrWrongDtypesAreRefused() {
    DTensor h, f, i;
    h.shape = f.shape = i.shape = {2, 3, 3, 5};
    h.dtype = DType::FP16;
    h.region = Region::F_FEATURE_FP16;
    i.dtype = DType::INT32;
    alignas(16) char dummy[16] = {};
    const LayerNode layer = layer_with(LayerType::ReLU);
    GraphNode n = node_for(ComputeOp::RELU_FWD);
    KernelArgs a;
    a.node = &n;
    a.layer_params = test::resolved(layer);
    auto refused = [&](const TensorArg& x, const TensorArg& y, const char* why) {
      a.in = {x};
      a.out = {y};
      try {
        cuda::cuda_compute_kernel(ComputeOp::RELU_FWD)(a, nullptr);
      } catch (const std::invalid_argument& e) {
        // The op, the layer and the operand are named.
        return std::strstr(e.what(), "RELU_FWD") && std::strstr(e.what(), "layer") &&
               std::strstr(e.what(), why);
      }
      return false;
    };
    QVERIFY(refused({dummy, &h}, {dummy, &f}, "fp16"));  // FP16 x, FP32 y
    QVERIFY(refused({dummy, &f}, {dummy, &h}, "fp16"));
    QVERIFY(refused({dummy, &i}, {dummy, &i}, "int32"));
    // Batch norm statistics stay FP32 under AMP.
    DTensor c16, c32;
    c16.shape = c32.shape = {1, 1, 1, 5};
    c16.dtype = DType::FP16;
    c16.region = Region::A_BN_WEIGHT;
    GraphNode bn = node_for(ComputeOp::BN_FWD_INFER);
    a.node = &bn;
    a.in = {{dummy, &h}, {dummy, &c16}, {dummy, &c32}};
    a.out = {{dummy, &h}};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             cuda::cuda_compute_kernel(ComputeOp::BN_FWD_INFER)(a, nullptr));
  }

  // ---- activations --------------------------------------------------------

  void activations() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const ActivationCase& c : activation_cases()) {
      const char* name = c.name.c_str();
      const LayerNode* layer = &c.layer;
      std::mt19937 rng(11);
      ComputeMirror m;
      const Shape s{3, 7, 5, 11};  // odd: no vector width divides it
      const size_t x = m.tensor(s), y = m.tensor(s), dy = m.tensor(s), dx = m.tensor(s);
      fill_activation_input(m, x, rng);
      m.fill(dy, rng);
      m.fill(dx, rng);  // what an accumulating backward adds onto
      GraphNode f = node_for(c.fwd);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &f, layer); }, c.fwd);
      if (c.exact)
        EXPECT_NONE(differs(m, y, name));
      else
        EXPECT_NONE(far(m, y, name));
      // Each run starts both sides from the host copies, so the backward
      // reads the CPU forward's output on both.
      const size_t saved = c.bwd_reads_y ? y : x;
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(c.bwd, mask, 3);
        m.run([&](bool d) { return m.args(d, {saved, dy}, {dx}, &b, layer); }, c.bwd);
        if (c.exact)
          EXPECT_NONE(differs(m, dx, name));
        else
          EXPECT_NONE(far(m, dx, name));
      }
      // An absent gradient is not written, and nothing fails.
      GraphNode b = node_for(c.bwd);
      m.run(
          [&](bool d) {
            return m.args(d, {saved, dy}, {ComputeMirror::kAbsent}, &b, layer);
          },
          c.bwd);
    }
  }

  // ---- copies -------------------------------------------------------------

  void identityAndFlattenCopyOrAdd() {
    TR_REQUIRE_CUDA_DEVICE();
    for (ComputeOp op : {ComputeOp::IDENTITY, ComputeOp::FLATTEN_FWD, ComputeOp::FLATTEN_BWD}) {
      std::mt19937 rng(12);
      ComputeMirror m;
      const size_t x = m.tensor({4, 3, 3, 7}), y = m.tensor({4, 1, 1, 63});
      m.fill(x, rng);
      m.fill(y, rng);
      // Overwrite, then add (one rounding on both sides: exact).
      for (uint8_t mask : {0, 1}) {
        GraphNode n = node_for(op, mask, 3);
        m.run([&](bool d) { return m.args(d, {x}, {y}, &n); }, op);
        EXPECT_NONE(differs(m, y, compute_op_name(op).data()));
      }
    }
  }

  void copyLabels() {
    TR_REQUIRE_CUDA_DEVICE();
    ComputeMirror m;
    const size_t from = m.tensor({37, 1, 1, 1}, DType::INT32),
                 to = m.tensor({37, 1, 1, 1}, DType::INT32);
    for (int i = 0; i < 37; ++i) m.i32(from)[i] = i * 7919 - 100;
    GraphNode n = node_for(ComputeOp::COPY_LABELS, -1);
    m.run([&](bool d) { return m.args(d, {from}, {to}, &n); }, ComputeOp::COPY_LABELS);
    EXPECT_NONE(differs(m, to, "COPY_LABELS"));
    QCOMPARE(reinterpret_cast<const int32_t*>(m.gpu_bytes(to))[36], 36 * 7919 - 100);
  }

  // ---- add ----------------------------------------------------------------

  void addForward() {
    TR_REQUIRE_CUDA_DEVICE();
    std::mt19937 rng(13);
    ComputeMirror m;
    const Shape s{2, 5, 5, 9};
    const size_t a = m.tensor(s), b = m.tensor(s), y = m.tensor(s);
    m.fill(a, rng);
    m.fill(b, rng);
    GraphNode n = node_for(ComputeOp::ADD_FWD);
    m.run([&](bool d) { return m.args(d, {a, b}, {y}, &n); }, ComputeOp::ADD_FWD);
    EXPECT_NONE(differs(m, y, "ADD_FWD"));
  }

  void addBackwardCopiesAddsAndSkips() {
    TR_REQUIRE_CUDA_DEVICE();
    std::mt19937 rng(14);
    ComputeMirror m;
    const Shape s{2, 5, 5, 9};
    const size_t dy = m.tensor(s), d0 = m.tensor(s), d1 = m.tensor(s);
    m.fill(dy, rng);
    m.fill(d0, rng);
    m.fill(d1, rng);
    struct Case {
      size_t out0, out1;
      uint8_t mask;
    };
    // Two slots; the first accumulating; both one slot (the second adds onto
    // what the first wrote); the first absent.
    for (const Case c :
         {Case{d0, d1, 0}, Case{d0, d1, 1}, Case{d0, d0, 2}, Case{ComputeMirror::kAbsent, d1, 2}}) {
      GraphNode n = node_for(ComputeOp::ADD_BWD, 3, c.mask);
      m.run([&](bool d) { return m.args(d, {dy}, {c.out0, c.out1}, &n); }, ComputeOp::ADD_BWD);
      EXPECT_NONE(differs(m, d0, "ADD_BWD dx0"));
      EXPECT_NONE(differs(m, d1, "ADD_BWD dx1"));
    }
  }

  void concatJoinsAndSplitsChannels() {
    TR_REQUIRE_CUDA_DEVICE();
    // 5 + 3 channels, FP32 (compact) and FP16 (every row padded to 8, padding poisoned).
    for (const DType dt : {DType::FP32, kHalf}) {
      std::mt19937 rng(16);
      ComputeMirror m;
      const bool half = dt == kHalf;
      const size_t x0 = m.tensor({2, 4, 3, 5}, dt), x1 = m.tensor({2, 4, 3, 3}, dt),
                   y = m.tensor({2, 4, 3, 8}, dt), d0 = m.tensor({2, 4, 3, 5}, dt),
                   d1 = m.tensor({2, 4, 3, 3}, dt), dy = m.tensor({2, 4, 3, 8}, dt),
                   same = m.tensor({2, 4, 3, 4}, dt), dsame = m.tensor({2, 4, 3, 4}, dt);
      for (size_t t : {x0, x1, y, d0, d1, dy, same, dsame}) {
        if (half)
          fill_half(m, t, rng);
        else
          m.fill(t, rng);
      }
      if (half) m.poison_padding(y);
      const auto check = [&](size_t t, const char* what) {
        if (half)
          EXPECT_NONE(half_far(m, t, what, 0));
        else
          EXPECT_NONE(differs(m, t, what));
      };
      GraphNode f = node_for(ComputeOp::CONCAT_FWD);
      m.run([&](bool d) { return m.args(d, {x0, x1}, {y}, &f); }, ComputeOp::CONCAT_FWD);
      check(y, "CONCAT_FWD");
      struct Out {
        size_t out0, out1;
        uint8_t mask;
      };
      for (const Out o : {Out{d0, d1, 0}, Out{d0, d1, 1}, Out{ComputeMirror::kAbsent, d1, 2}}) {
        GraphNode b = node_for(ComputeOp::CONCAT_BWD, 3, o.mask);
        m.run([&](bool d) { return m.args(d, {dy}, {o.out0, o.out1}, &b); }, ComputeOp::CONCAT_BWD);
        check(d0, "CONCAT_BWD dx0");
        check(d1, "CONCAT_BWD dx1");
      }
      // A tensor concatenated with itself: both slices into one slot.
      for (const uint8_t mask : {uint8_t{2}, uint8_t{3}}) {
        GraphNode b = node_for(ComputeOp::CONCAT_BWD, 3, mask);
        m.run([&](bool d) { return m.args(d, {dy}, {dsame, dsame}, &b); }, ComputeOp::CONCAT_BWD);
        check(dsame, "CONCAT_BWD into one slot");
      }
    }
  }

  // ---- dropout ------------------------------------------------------------

  void dropoutMasksAreTheCpuMasks() {
    TR_REQUIRE_CUDA_DEVICE();
    // C = 5: the mask's channels are padded to 8 (per-row walk); C = 16: not (one flat row).
    for (const Shape s : {Shape{3, 5, 4, 5}, Shape{2, 3, 3, 16}}) {
      for (const double p : {0.3, 1.0}) {
        for (const int rank : {0, 1}) {
          std::mt19937 rng(15);
          ComputeMirror m;
          const size_t x = m.tensor(s), y = m.tensor(s), mask = m.tensor(s, DType::INT8),
                       dy = m.tensor(s), dx = m.tensor(s);
          m.fill(x, rng);
          m.fill(dy, rng);
          m.fill(dx, rng);
          // The step is read from the device's scalars, not from the host.
          m.scalar(ScalarSlot::STEP) = 17.0f;
          LayerParams lp;
          lp.p = p;
          const LayerNode layer = layer_with(LayerType::Dropout, lp);
          GraphNode f = node_for(ComputeOp::DROPOUT_FWD, 0, 4);
          auto fwd = [&](bool d) {
            KernelArgs a = m.args(d, {x}, {y, mask}, &f, &layer);
            a.seed = 1234;
            a.rank = rank;
            a.world = 2;
            return a;
          };
          m.run(fwd, ComputeOp::DROPOUT_FWD);
          // The whole slot: the padding channels must stay untouched too.
          EXPECT_NONE(differs(m, mask, "DROPOUT_FWD mask"));
          // x * (m * scale), two rounded products on both sides.
          EXPECT_NONE(differs(m, y, "DROPOUT_FWD y"));
          int64_t kept = 0;
          for (uint64_t i = 0; i < m.bytes(mask); ++i) kept += m.gpu_bytes(mask)[i];
          QVERIFY(p < 1.0 ? kept > 0 : kept == 0);

          GraphNode b = node_for(ComputeOp::DROPOUT_BWD, 0, 4);
          m.run(
              [&](bool d) {
                return m.args(d, {mask, dy}, {dx}, &b, &layer);
              },
              ComputeOp::DROPOUT_BWD);
          EXPECT_NONE(differs(m, dx, "DROPOUT_BWD"));
          GraphNode acc = node_for(ComputeOp::DROPOUT_BWD, 1, 4);
          m.run(
              [&](bool d) {
                return m.args(d, {mask, dy}, {dx}, &acc, &layer);
              },
              ComputeOp::DROPOUT_BWD);
          EXPECT_NONE(far(m, dx, "DROPOUT_BWD accumulate"));
        }
      }
    }
  }

  // ---- pooling ------------------------------------------------------------

  void maxPoolingMatchesBitForBit() {
    TR_REQUIRE_CUDA_DEVICE();
    // Tiled 2x2 (with an uncovered last row and column), overlapping 3x3
    // stride 2 with padding, dense 3x3 stride 1.
    struct Case {
      int64_t k, s, p;
    };
    for (const Case c : {Case{2, 2, 0}, Case{3, 2, 1}, Case{3, 1, 1}}) {
      std::mt19937 rng(16);
      ComputeMirror m;
      const Shape in{2, 7, 9, 6};
      const Shape out{2, pooled(7, c.k, c.s, c.p), pooled(9, c.k, c.s, c.p), 6};
      const size_t x = m.tensor(in), y = m.tensor(out), dy = m.tensor(out), dx = m.tensor(in);
      // Few distinct values: windows with tied maxima, where the first wins.
      m.fill_ties(x, rng, -3, 3);
      m.f32(x)[5] = std::numeric_limits<float>::quiet_NaN();  // a NaN wins its windows
      m.fill(dy, rng);
      m.fill(dx, rng);
      const LayerNode layer = layer_with(LayerType::MaxPool2d, square_window(c.k, c.s, c.p));
      GraphNode f = node_for(ComputeOp::MAXPOOL_FWD);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &f, &layer); }, ComputeOp::MAXPOOL_FWD);
      EXPECT_NONE(differs(m, y, "MAXPOOL_FWD"));
      // Overwrite, then add: the same additions in the same order on both.
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(ComputeOp::MAXPOOL_BWD, mask, 3);
        m.run(
            [&](bool d) {
              return m.args(d, {x, y, dy}, {dx}, &b, &layer);
            },
            ComputeOp::MAXPOOL_BWD);
        EXPECT_NONE(differs(m, dx, "MAXPOOL_BWD"));
      }
    }
  }

  void averagePooling() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      int64_t k, s, p;
    };
    // count_include_pad windows that hang over the padding, and plain tiles.
    for (const Case c : {Case{3, 2, 1}, Case{2, 2, 0}, Case{3, 1, 1}}) {
      std::mt19937 rng(17);
      ComputeMirror m;
      const Shape in{2, 7, 9, 6};
      const Shape out{2, pooled(7, c.k, c.s, c.p), pooled(9, c.k, c.s, c.p), 6};
      const size_t x = m.tensor(in), y = m.tensor(out), dy = m.tensor(out), dx = m.tensor(in);
      m.fill(x, rng);
      m.fill(dy, rng);
      m.fill(dx, rng);
      const LayerNode layer = layer_with(LayerType::AvgPool2d, square_window(c.k, c.s, c.p));
      GraphNode f = node_for(ComputeOp::AVGPOOL_FWD);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &f, &layer); }, ComputeOp::AVGPOOL_FWD);
      EXPECT_NONE(far(m, y, "AVGPOOL_FWD"));
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(ComputeOp::AVGPOOL_BWD, mask, 3);
        m.run([&](bool d) { return m.args(d, {dy}, {dx}, &b, &layer); }, ComputeOp::AVGPOOL_BWD);
        EXPECT_NONE(far(m, dx, "AVGPOOL_BWD"));
      }
    }
  }

  void globalAveragePooling() {
    TR_REQUIRE_CUDA_DEVICE();
    std::mt19937 rng(18);
    ComputeMirror m;
    const Shape in{3, 5, 7, 12};
    const size_t x = m.tensor(in), y = m.tensor({3, 1, 1, 12}), dy = m.tensor({3, 1, 1, 12}),
                 dx = m.tensor(in);
    m.fill(x, rng);
    m.fill(dy, rng);
    m.fill(dx, rng);
    GraphNode f = node_for(ComputeOp::GAP_FWD);
    m.run([&](bool d) { return m.args(d, {x}, {y}, &f); }, ComputeOp::GAP_FWD);
    EXPECT_NONE(far(m, y, "GAP_FWD"));
    for (uint8_t mask : {0, 1}) {
      GraphNode b = node_for(ComputeOp::GAP_BWD, mask, 3);
      m.run([&](bool d) { return m.args(d, {dy}, {dx}, &b); }, ComputeOp::GAP_BWD);
      EXPECT_NONE(far(m, dx, "GAP_BWD"));
    }
  }

  // ---- softmax cross-entropy ---------------------------------------------

  void softmaxCrossEntropy() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      int64_t n, k;
      bool ties;       // whole-number logits: tied top-k and predictions
      bool bad_label;  // a label out of range: NaN loss, zero gradient row
      bool amp;        // gradient of the scaled loss
    };
    for (const Case c : {Case{37, 10, true, false, false}, Case{19, 1000, false, false, false},
                         Case{37, 10, false, true, false}, Case{64, 7, true, false, true}}) {
      std::mt19937 rng(19);
      ComputeMirror m;
      const size_t logits = m.tensor({c.n, 1, 1, c.k}),
                   labels = m.tensor({c.n, 1, 1, 1}, DType::INT32), result = m.tensor({1, 1, 1, 4}),
                   grad = m.tensor({c.n, 1, 1, c.k}), confusion = m.tensor({1, 1, c.k, c.k});
      if (c.ties)
        m.fill_ties(logits, rng, -2, 2);
      else
        m.fill(logits, rng, -5.0f, 5.0f);
      std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(c.k - 1));
      for (int64_t i = 0; i < c.n; ++i) m.i32(labels)[i] = label(rng);
      if (c.bad_label) m.i32(labels)[5] = static_cast<int32_t>(c.k);
      m.fill(grad, rng);
      // Counts of earlier batches, for the accumulating confusion.
      m.fill_ties(confusion, rng, 0, 9);
      TrainingSpec training;
      training.precision = c.amp ? Precision::AMP : Precision::FP32;
      m.scalar(ScalarSlot::LOSS_SCALE) = 1024.0f;
      const double grad_scale = (c.amp ? 1024.0 : 1.0) / static_cast<double>(c.n);

      auto check_result = [&](const char* what) {
        const float* g = m.gpu_f32(result);
        const float* h = m.f32(result);
        if (c.bad_label) {
          QVERIFY2(std::isnan(g[0]) && std::isnan(h[0]), what);
        } else {
          QVERIFY2(std::fabs(g[0] - h[0]) <= 1e-6 * std::fabs(h[0]),
                   qPrintable(QString("%1 loss: device %2, CPU %3").arg(what).arg(g[0]).arg(h[0])));
        }
        for (int i = 1; i < 4; ++i) QCOMPARE(g[i], h[i]);  // hits and rows: exact
      };

      for (uint8_t mask : {0, 2}) {
        GraphNode n = node_for(ComputeOp::SOFTMAX_CE_FWD_BWD, mask, 9);
        m.run(
            [&](bool d) {
              KernelArgs a = m.args(d, {logits, labels}, {result, grad}, &n);
              a.training = test::resolved(training);
              return a;
            },
            ComputeOp::SOFTMAX_CE_FWD_BWD);
        check_result("SOFTMAX_CE_FWD_BWD");
        EXPECT_NONE(far(m, grad, "SOFTMAX_CE_FWD_BWD gradient", kRel, kRel * grad_scale));
        if (c.bad_label && mask == 0)
          for (int64_t k = 0; k < c.k; ++k) QCOMPARE(m.gpu_f32(grad)[5 * c.k + k], 0.0f);
      }
      for (uint8_t mask : {0, 2}) {
        GraphNode n = node_for(ComputeOp::SOFTMAX_CE_FWD, mask, 9);
        m.run(
            [&](bool d) {
              return m.args(d, {logits, labels}, {result, confusion}, &n);
            },
            ComputeOp::SOFTMAX_CE_FWD);
        check_result("SOFTMAX_CE_FWD");
        EXPECT_NONE(differs(m, confusion, "SOFTMAX_CE_FWD confusion"));
      }
      // Without a confusion block only the result is written.
      GraphNode n = node_for(ComputeOp::SOFTMAX_CE_FWD, 0, 9);
      m.run(
          [&](bool d) {
            return m.args(d, {logits, labels}, {result}, &n);
          },
          ComputeOp::SOFTMAX_CE_FWD);
      check_result("SOFTMAX_CE_FWD without confusion");
    }
  }

  // ---- FP16 (AMP) ---------------------------------------------------------

  void fp16Activations() {
    TR_REQUIRE_CUDA_DEVICE();
    for (const ActivationCase& c : activation_cases()) {
      const char* name = c.name.c_str();
      const LayerNode* layer = &c.layer;
      const int ulps = c.exact ? 0 : 1;
      const double abs = ulps ? 1e-5 : 0.0;
      std::mt19937 rng(31);
      ComputeMirror m;
      const Shape s{3, 7, 5, 11};  // 11 channels: rows padded to 16
      const size_t x = m.tensor(s, kHalf), y = m.tensor(s, kHalf), dy = m.tensor(s, kHalf),
                   dx = m.tensor(s, kHalf);
      fill_half(m, x, rng, -4.0f, 4.0f);
      m.set_half(x, 0, 0.0f);
      m.set_half(x, 1, -0.0f);
      m.set_half(x, 2, std::numeric_limits<float>::quiet_NaN());
      fill_half(m, dy, rng);
      fill_half(m, dx, rng);
      m.poison_padding(y);
      GraphNode f = node_for(c.fwd);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &f, layer); }, c.fwd);
      EXPECT_NONE(half_far(m, y, name, ulps, abs));
      const size_t saved = c.bwd_reads_y ? y : x;
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(c.bwd, mask, 3);
        m.run([&](bool d) { return m.args(d, {saved, dy}, {dx}, &b, layer); }, c.bwd);
        EXPECT_NONE(half_far(m, dx, name, ulps, abs));
      }
    }
  }

  void fp16CopiesAndAdd() {
    TR_REQUIRE_CUDA_DEVICE();
    std::mt19937 rng(32);
    ComputeMirror m;
    // 7 channels (padded to 8) flattened to 63 (padded to 64): a repack.
    const size_t x = m.tensor({4, 3, 3, 7}, kHalf), x2 = m.tensor({4, 3, 3, 7}, kHalf),
                 y = m.tensor({4, 1, 1, 63}, kHalf);
    for (size_t t : {x, x2, y}) fill_half(m, t, rng);
    struct Case {
      ComputeOp op;
      size_t from, to;
    };
    for (const Case c : {Case{ComputeOp::FLATTEN_FWD, x, y}, Case{ComputeOp::FLATTEN_BWD, y, x},
                         Case{ComputeOp::IDENTITY, x, x2}})
      for (uint8_t mask : {0, 1}) {
        GraphNode n = node_for(c.op, mask, 3);
        m.run([&](bool d) { return m.args(d, {c.from}, {c.to}, &n); }, c.op);
        EXPECT_NONE(half_far(m, c.to, compute_op_name(c.op).data(), 0));
      }

    const Shape s{2, 5, 5, 9};
    const size_t a = m.tensor(s, kHalf), b = m.tensor(s, kHalf), sum = m.tensor(s, kHalf),
                 dy = m.tensor(s, kHalf), d0 = m.tensor(s, kHalf), d1 = m.tensor(s, kHalf);
    for (size_t t : {a, b, sum, dy, d0, d1}) fill_half(m, t, rng);
    GraphNode n = node_for(ComputeOp::ADD_FWD);
    m.run([&](bool d) { return m.args(d, {a, b}, {sum}, &n); }, ComputeOp::ADD_FWD);
    EXPECT_NONE(half_far(m, sum, "ADD_FWD", 0));
    struct Out {
      size_t out0, out1;
      uint8_t mask;
    };
    // Both outputs one slot, the first accumulating too: rounded once on both.
    for (const Out o : {Out{d0, d1, 0}, Out{d0, d1, 1}, Out{d0, d0, 2}, Out{d0, d0, 3},
                        Out{ComputeMirror::kAbsent, d1, 2}}) {
      GraphNode bn = node_for(ComputeOp::ADD_BWD, 3, o.mask);
      m.run([&](bool d) { return m.args(d, {dy}, {o.out0, o.out1}, &bn); }, ComputeOp::ADD_BWD);
      EXPECT_NONE(half_far(m, d0, "ADD_BWD dx0", 0));
      EXPECT_NONE(half_far(m, d1, "ADD_BWD dx1", 0));
    }
  }

  void fp16DropoutMasksAreTheCpuMasks() {
    TR_REQUIRE_CUDA_DEVICE();
    // C = 5: features and mask padded to 8; C = 16: neither (one flat row).
    for (const Shape s : {Shape{3, 5, 4, 5}, Shape{2, 3, 3, 16}})
      for (const int rank : {0, 1}) {
        std::mt19937 rng(33);
        ComputeMirror m;
        const size_t x = m.tensor(s, kHalf), y = m.tensor(s, kHalf),
                     mask = m.tensor(s, DType::INT8), dy = m.tensor(s, kHalf),
                     dx = m.tensor(s, kHalf);
        for (size_t t : {x, y, dy, dx}) fill_half(m, t, rng);
        m.scalar(ScalarSlot::STEP) = 17.0f;
        LayerParams lp;
        lp.p = 0.3;
        const LayerNode layer = layer_with(LayerType::Dropout, lp);
        GraphNode f = node_for(ComputeOp::DROPOUT_FWD, 0, 4);
        m.run(
            [&](bool d) {
              KernelArgs a = m.args(d, {x}, {y, mask}, &f, &layer);
              a.seed = 1234;
              a.rank = rank;
              a.world = 2;
              return a;
            },
            ComputeOp::DROPOUT_FWD);
        EXPECT_NONE(differs(m, mask, "fp16 DROPOUT_FWD mask"));
        EXPECT_NONE(half_far(m, y, "fp16 DROPOUT_FWD y", 0));
        for (uint8_t acc : {0, 1}) {
          GraphNode b = node_for(ComputeOp::DROPOUT_BWD, acc, 4);
          m.run(
              [&](bool d) {
                return m.args(d, {mask, dy}, {dx}, &b, &layer);
              },
              ComputeOp::DROPOUT_BWD);
          EXPECT_NONE(half_far(m, dx, "fp16 DROPOUT_BWD", acc, acc ? 1e-6 : 0.0));
        }
      }
  }

  void fp16Pooling() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      int64_t k, s, p;
    };
    for (const Case c : {Case{2, 2, 0}, Case{3, 2, 1}, Case{3, 1, 1}}) {
      std::mt19937 rng(34);
      ComputeMirror m;
      const Shape in{2, 7, 9, 6};  // 6 channels: rows padded to 8
      const Shape out{2, pooled(7, c.k, c.s, c.p), pooled(9, c.k, c.s, c.p), 6};
      const size_t x = m.tensor(in, kHalf), y = m.tensor(out, kHalf), dy = m.tensor(out, kHalf),
                   dx = m.tensor(in, kHalf);
      m.fill_half_ties(x, rng, -3, 3);
      m.poison_padding(x);
      m.set_half(x, 5, std::numeric_limits<float>::quiet_NaN());
      for (size_t t : {y, dy, dx}) fill_half(m, t, rng);
      const LayerNode maxl = layer_with(LayerType::MaxPool2d, square_window(c.k, c.s, c.p));
      GraphNode f = node_for(ComputeOp::MAXPOOL_FWD);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &f, &maxl); }, ComputeOp::MAXPOOL_FWD);
      EXPECT_NONE(half_far(m, y, "fp16 MAXPOOL_FWD", 0));
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(ComputeOp::MAXPOOL_BWD, mask, 3);
        m.run(
            [&](bool d) {
              return m.args(d, {x, y, dy}, {dx}, &b, &maxl);
            },
            ComputeOp::MAXPOOL_BWD);
        EXPECT_NONE(half_far(m, dx, "fp16 MAXPOOL_BWD", 0));
      }
      fill_half(m, x, rng);
      const LayerNode avgl = layer_with(LayerType::AvgPool2d, square_window(c.k, c.s, c.p));
      GraphNode af = node_for(ComputeOp::AVGPOOL_FWD);
      m.run([&](bool d) { return m.args(d, {x}, {y}, &af, &avgl); }, ComputeOp::AVGPOOL_FWD);
      EXPECT_NONE(half_far(m, y, "fp16 AVGPOOL_FWD", 1, 1e-5));
      for (uint8_t mask : {0, 1}) {
        GraphNode b = node_for(ComputeOp::AVGPOOL_BWD, mask, 3);
        m.run([&](bool d) { return m.args(d, {dy}, {dx}, &b, &avgl); }, ComputeOp::AVGPOOL_BWD);
        EXPECT_NONE(half_far(m, dx, "fp16 AVGPOOL_BWD", 1, 1e-5));
      }
    }
    std::mt19937 rng(35);
    ComputeMirror m;
    const Shape in{3, 5, 7, 12};  // 12 channels: rows padded to 16
    const size_t x = m.tensor(in, kHalf), y = m.tensor({3, 1, 1, 12}, kHalf),
                 dy = m.tensor({3, 1, 1, 12}, kHalf), dx = m.tensor(in, kHalf);
    for (size_t t : {x, y, dy, dx}) fill_half(m, t, rng);
    GraphNode f = node_for(ComputeOp::GAP_FWD);
    m.run([&](bool d) { return m.args(d, {x}, {y}, &f); }, ComputeOp::GAP_FWD);
    EXPECT_NONE(half_far(m, y, "fp16 GAP_FWD", 1, 1e-5));
    for (uint8_t mask : {0, 1}) {
      GraphNode b = node_for(ComputeOp::GAP_BWD, mask, 3);
      m.run([&](bool d) { return m.args(d, {dy}, {dx}, &b); }, ComputeOp::GAP_BWD);
      EXPECT_NONE(half_far(m, dx, "fp16 GAP_BWD", 1, 1e-5));
    }
  }

  void fp16SoftmaxCrossEntropy() {
    TR_REQUIRE_CUDA_DEVICE();
    struct Case {
      int64_t n, k;
      bool ties, amp;
    };
    // 10 and 7 classes: rows padded to 16 and 8; 1000: padded to 1000.
    for (const Case c :
         {Case{37, 10, true, false}, Case{19, 1000, false, false}, Case{64, 7, false, true}}) {
      std::mt19937 rng(36);
      ComputeMirror m;
      const size_t logits = m.tensor({c.n, 1, 1, c.k}, kHalf),
                   labels = m.tensor({c.n, 1, 1, 1}, DType::INT32), result = m.tensor({1, 1, 1, 4}),
                   grad = m.tensor({c.n, 1, 1, c.k}, kHalf), confusion = m.tensor({1, 1, c.k, c.k});
      if (c.ties) {
        m.fill_half_ties(logits, rng, -2, 2);
        m.poison_padding(logits);
      } else {
        fill_half(m, logits, rng, -5.0f, 5.0f);
      }
      std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(c.k - 1));
      for (int64_t i = 0; i < c.n; ++i) m.i32(labels)[i] = label(rng);
      fill_half(m, grad, rng);
      m.fill_ties(confusion, rng, 0, 9);
      TrainingSpec training;
      training.precision = c.amp ? Precision::AMP : Precision::FP32;
      m.scalar(ScalarSlot::LOSS_SCALE) = 1024.0f;
      auto check_result = [&](const char* what) {
        const float* g = m.gpu_f32(result);
        const float* h = m.f32(result);
        QVERIFY2(std::fabs(g[0] - h[0]) <= 1e-6 * std::fabs(h[0]),
                 qPrintable(QString("%1 loss: device %2, CPU %3").arg(what).arg(g[0]).arg(h[0])));
        for (int i = 1; i < 4; ++i) QCOMPARE(g[i], h[i]);
      };
      for (uint8_t mask : {0, 2}) {
        GraphNode n = node_for(ComputeOp::SOFTMAX_CE_FWD_BWD, mask, 9);
        m.run(
            [&](bool d) {
              KernelArgs a = m.args(d, {logits, labels}, {result, grad}, &n);
              a.training = test::resolved(training);
              return a;
            },
            ComputeOp::SOFTMAX_CE_FWD_BWD);
        check_result("fp16 SOFTMAX_CE_FWD_BWD");
        EXPECT_NONE(half_far(m, grad, "fp16 SOFTMAX_CE_FWD_BWD gradient", 1, 1e-7));
      }
      for (uint8_t mask : {0, 2}) {
        GraphNode n = node_for(ComputeOp::SOFTMAX_CE_FWD, mask, 9);
        m.run(
            [&](bool d) {
              return m.args(d, {logits, labels}, {result, confusion}, &n);
            },
            ComputeOp::SOFTMAX_CE_FWD);
        check_result("fp16 SOFTMAX_CE_FWD");
        EXPECT_NONE(differs(m, confusion, "fp16 SOFTMAX_CE_FWD confusion"));
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestCudaComputeKernels)
#include "test_cuda_compute_kernels.moc"

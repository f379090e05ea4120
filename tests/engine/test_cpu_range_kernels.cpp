// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CPU RANGE kernels: the scalar FP16 conversion bit
// for bit against a slow reference over every half and random floats, and the
// compiler's own update graphs (LARS, BN inference parameters, EMA, the AMP
// gradient path) run node by node on the compiler's own plan, the way the
// runtime resolves their spans. Every range op's values against a plain
// reference, on every backend: engine.backend_ops.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/half_convert.h"
#include "compile/compiler.h"
#include "model_builder.h"
#include "resolved_params.h"

using namespace tr;

namespace {

float& slot(std::vector<float>& scalars, ScalarSlot s) {
  return scalars[static_cast<size_t>(s)];
}

// A resolved span of `plan` inside the arena at `base`, as the runtime builds it.
SpanArg make_span(const MemoryPlan& plan, uint8_t* base, RegionSpan rs) {
  const ByteRange r = plan.region_range(rs.first, rs.last);
  SpanArg s;
  s.data = base + r.offset;
  s.bytes = r.bytes;
  s.offset = r.offset;
  for (int i = region_index(rs.first); i <= region_index(rs.last); ++i)
    for (DTensorId id : plan.region(static_cast<Region>(i)).tensors)
      s.tensors.push_back(&plan.get_dtensor(id));
  return s;
}

// An arena for one plan: zeroed bytes, the scalars, and typed access by tensor id.
struct Arena {
  const MemoryPlan* plan = nullptr;
  std::vector<uint64_t> storage;  // 8-byte aligned, zeroed
  std::vector<float> scalars = std::vector<float>(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  const ModelGraph* model = nullptr;
  const TrainingSpec* training = nullptr;

  explicit Arena(const MemoryPlan& p) : plan(&p), storage(p.total_bytes() / 8 + 1, 0) {}
  uint8_t* base() { return reinterpret_cast<uint8_t*>(storage.data()); }
  float* f32(DTensorId id) {
    return reinterpret_cast<float*>(base() + plan->get_dtensor(id).offset);
  }
  uint16_t* f16(DTensorId id) {
    return reinterpret_cast<uint16_t*>(base() + plan->get_dtensor(id).offset);
  }
  SpanArg span(Region first, Region last) { return make_span(*plan, base(), {first, last}); }
  KernelArgs args(std::vector<SpanArg> in, std::vector<SpanArg> out) {
    KernelArgs a;
    a.in_spans = std::move(in);
    a.out_spans = std::move(out);
    a.scalars = scalars.data();
    a.layer_params = model ? test::resolved_bn_eq(*model) : nullptr;
    a.training = test::resolved(training);
    return a;
  }
  // The KernelArgs of a compiled RANGE or scalar node.
  KernelArgs args(const GraphNode& n) {
    std::vector<SpanArg> in, out;
    for (const RegionSpan& rs : n.in_spans) in.push_back(make_span(*plan, base(), rs));
    for (const RegionSpan& rs : n.out_spans) out.push_back(make_span(*plan, base(), rs));
    KernelArgs a = args(std::move(in), std::move(out));
    a.node = &n;
    return a;
  }
  void fill(DTensorId id, float v) {
    float* p = f32(id);
    for (int64_t i = 0; i < plan->get_dtensor(id).shape.elements(); ++i) p[i] = v;
  }
};

// The IEEE value of a binary16 bit pattern, computed independently of the kernel.
double half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}

// Reference float -> half for finite inputs: nearest of the two neighbouring
// halves, ties to the even bit pattern, >= 65520 to infinity.
uint16_t half_reference(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7C00;
  uint16_t lo = 0, hi = 0x7BFF;  // largest h with half_value(h) <= a
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (half_value(mid) <= a)
      lo = mid;
    else
      hi = static_cast<uint16_t>(mid - 1);
  }
  if (lo == 0x7BFF && a > half_value(0x7BFF)) {  // between 65504 and 65520
    const double d = a - 65504.0;
    return sign | (d < 16.0 ? 0x7BFF : 0x7C00);
  }
  const double d_lo = a - half_value(lo), d_hi = half_value(static_cast<uint16_t>(lo + 1)) - a;
  uint16_t r = lo;
  if (d_hi < d_lo || (d_hi == d_lo && (lo & 1))) r = static_cast<uint16_t>(lo + 1);
  return sign | r;
}

}  // namespace

class TestCpuRangeKernels : public QObject {
  Q_OBJECT

 private slots:
  // ---- AMP casts -----------------------------------------------------------

  void halfConversionIsExactAndRoundsToNearestEven() {
    // Every half -> float -> half round trips; NaNs stay NaN.
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const uint16_t h = static_cast<uint16_t>(b);
      const float f = cpu::half_bits_to_float(h);
      const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
      if (nan) {
        QVERIFY(std::isnan(f));
        QVERIFY(std::isnan(cpu::half_bits_to_float(cpu::float_to_half_bits(f))));
        if (h & 0x200) QCOMPARE(cpu::float_to_half_bits(f), h);  // quiet NaNs keep their bits
        continue;
      }
      if ((h & 0x7FFF) == 0x7C00) {
        QVERIFY(std::isinf(f));
      } else {
        QCOMPARE(static_cast<double>(f), half_value(h));
      }
      QCOMPARE(cpu::float_to_half_bits(f), h);
    }
    // Random floats (all exponents) against the slow reference.
    std::mt19937 rng(29);
    for (int i = 0; i < 200000; ++i) {
      uint32_t bits = rng();
      if (i % 2) bits = (bits & 0x807FFFFFu) | ((100u + rng() % 50u) << 23);  // near half range
      const float f = std::bit_cast<float>(bits);
      if (std::isnan(f)) continue;
      if (cpu::float_to_half_bits(f) != half_reference(f))
        QFAIL(qPrintable(QString("float %1 (0x%2)")
                             .arg(static_cast<double>(f), 0, 'g', 9)
                             .arg(bits, 8, 16, QChar('0'))));
    }
  }

  // ---- the compiler's own update graphs ------------------------------------

  void compiledLarsAndBnGraphsRunOnTheirPlan() {
    // conv1 -> bn1 -> relu -> conv2 -> bn2 -> relu -> pool -> flatten -> fc,
    // with LARS, EMA: run OPTIMIZER (SGD on BN), the three LARS graphs,
    // UPDATE_BN_INF_PARAMS and EMA_UPDATE exactly as emitted.
    ModelBuilder b;
    Project& p = b.project();
    p.dataset.kind = DatasetKind::Synthetic;
    p.dataset.height = p.dataset.width = 8;
    p.dataset.classes = 10;
    p.dataset.train_size = 1000;
    p.dataset.val_size = 200;
    p.training.global_batch = 8;
    p.training.optimizer.kind = OptimizerKind::LARS;
    p.training.optimizer.momentum = 0.9;
    p.training.optimizer.weight_decay = 0.0;
    p.training.optimizer.trust_coefficient = 0.01;
    p.training.ema = true;
    p.training.ema_decay = 0.5;
    p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                  {"val", VariantKind::Validation, 8, 0, 0}};
    LayerParams bn2;
    bn2.eps = 0.5;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1, false))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("conv2", LayerType::Conv2d, square_conv(4, 3, 1, 1, true))
        .node("bn2", LayerType::BatchNorm2d, bn2)
        .node("relu2", LayerType::ReLU)
        .node("pool", LayerType::MaxPool2d, pool(2, 2))
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "pool", "flatten", "fc",
                "loss"});
    const CompiledProject cp = compile_project(b.build());
    const MemoryPlan& plan = cp.plans.front();
    Arena ar(plan);
    ar.model = &cp.project.model;
    ar.training = &cp.project.training;
    slot(ar.scalars, ScalarSlot::LR) = 1.0f;

    const int conv2 = cp.project.model.find("conv2"), fc = cp.project.model.find("fc"),
              bn2n = cp.project.model.find("bn2");
    const LayerTensors& c2 = cp.layers[static_cast<size_t>(conv2)];
    const LayerTensors& f = cp.layers[static_cast<size_t>(fc)];
    const LayerTensors& b2 = cp.layers[static_cast<size_t>(bn2n)];
    auto fill = [&](DTensorId id, float v) { ar.fill(id, v); };
    fill(c2.weight_in(ParamSeries::W), 3.0f);
    fill(c2.weight_in(ParamSeries::G), 4.0f);
    fill(c2.bias_in(ParamSeries::W), 1.0f);
    fill(c2.bias_in(ParamSeries::G), 1.0f);
    fill(f.weight_in(ParamSeries::W), -1.0f);
    fill(f.weight_in(ParamSeries::G), 0.5f);
    fill(b2.weight_in(ParamSeries::W), 2.0f);
    fill(b2.weight_in(ParamSeries::G), 1.0f);
    fill(b2.prev_var, 1.5f);
    fill(b2.prev_mean, 1.0f);

    auto run = [&](GraphId id) {
      const ComputationGraph* g = cp.find_graph(id, 0);
      QVERIFY2(g, graph_id_name(id).data());
      for (const GraphNode& n : g->nodes) {
        const cpu::Kernel k =
            n.kind == NodeKind::RANGE ? cpu::range_kernel(n.range_op) : cpu::compute_kernel(n.op);
        QVERIFY(k);
        k(ar.args(n));
      }
    };
    run(GraphId::OPTIMIZER);
    run(GraphId::LARS_FC_OPT);
    run(GraphId::LARS_FIRST_CONV_OPT);
    run(GraphId::LARS_DEEP_CONV_OPT);
    run(GraphId::UPDATE_BN_INF_PARAMS);
    run(GraphId::EMA_UPDATE);

    // conv2.weight (36 x 3, 4 x 3 x 3 x 4 = 144 elements): ratio 0.01 * 3 / 4.
    QVERIFY(std::fabs(ar.f32(c2.weight_in(ParamSeries::W))[143] - (3.0 - 0.0075 * 4.0)) < 1e-6);
    QVERIFY(std::fabs(ar.f32(c2.lars_norm)[0] - 3.0 * 12.0) < 1e-4);
    // conv2.bias: ratio 1.
    QCOMPARE(ar.f32(c2.bias_in(ParamSeries::W))[3], 0.0f);
    // fc.weight (10 x 64): ratio 0.01 * 1 / 0.5 = 0.02.
    QVERIFY(std::fabs(ar.f32(f.weight_in(ParamSeries::W))[639] - (-1.0 - 0.02 * 0.5)) < 1e-6);
    // bn2.weight: plain SGD (lr 1): 2 - 1 = 1.
    QCOMPARE(ar.f32(b2.weight_in(ParamSeries::W))[0], 1.0f);
    // Equivalent parameters with bn2's own eps (0.5): scale = 1 / sqrt(2).
    QVERIFY(std::fabs(ar.f32(b2.eq_scale)[1] - 1.0 / std::sqrt(2.0)) < 1e-6);
    QVERIFY(std::fabs(ar.f32(b2.eq_bias)[1] + 1.0 / std::sqrt(2.0)) < 1e-6);
    // EMA with decay 0.5 from E = 0.
    QCOMPARE(ar.f32(b2.weight_in(ParamSeries::E))[2], 0.5f);
  }

  void compiledAmpGradientPathRunsOnItsPlan() {
    // AMP + SGD: zero grads, cast H -> G for both buckets, NaN check, unscale,
    // loss-scale update, SGD, cast W -> A.
    ModelBuilder b;
    Project& p = b.project();
    p.dataset.kind = DatasetKind::Synthetic;
    p.dataset.height = p.dataset.width = 8;
    p.dataset.classes = 10;
    p.dataset.train_size = 1000;
    p.dataset.val_size = 200;
    p.training.global_batch = 8;
    p.training.precision = Precision::AMP;
    p.training.optimizer.momentum = 0.0;
    p.training.optimizer.weight_decay = 0.0;
    p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                  {"val", VariantKind::Validation, 8, 0, 0}};
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("relu1", LayerType::ReLU)
        .node("conv2", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "relu1", "conv2", "flatten", "fc", "loss"});
    const CompiledProject cp = compile_project(b.build());
    const MemoryPlan& plan = cp.plans.front();
    Arena ar(plan);
    ar.model = &cp.project.model;
    ar.training = &cp.project.training;
    slot(ar.scalars, ScalarSlot::LR) = 0.5f;
    slot(ar.scalars, ScalarSlot::LOSS_SCALE) = 4.0f;
    slot(ar.scalars, ScalarSlot::INV_LOSS_SCALE) = 0.25f;
    const LayerTensors& c1 = cp.layers[static_cast<size_t>(cp.project.model.find("conv1"))];
    const LayerTensors& c2 = cp.layers[static_cast<size_t>(cp.project.model.find("conv2"))];
    auto run = [&](GraphId id) {
      const ComputationGraph* g = cp.find_graph(id, 0);
      QVERIFY2(g, graph_id_name(id).data());
      for (const GraphNode& n : g->nodes) {
        const cpu::Kernel k =
            n.kind == NodeKind::RANGE ? cpu::range_kernel(n.range_op) : cpu::compute_kernel(n.op);
        QVERIFY(k);
        k(ar.args(n));
      }
    };
    auto fill_half = [&](DTensorId id, float v) {
      uint16_t* h = ar.f16(id);
      for (int64_t i = 0; i < plan.get_dtensor(id).shape.elements(); ++i)
        h[i] = cpu::float_to_half_bits(v);
    };
    ar.fill(c1.weight_in(ParamSeries::W), 1.0f);
    ar.fill(c2.weight_in(ParamSeries::W), 1.0f);
    run(GraphId::ZERO_GRAD);
    fill_half(c1.weight_in(ParamSeries::H), 2.0f);  // scaled gradients
    fill_half(c2.weight_in(ParamSeries::H), 6.0f);
    run(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32);
    run(GraphId::CAST_FIRST_GRAD_FP16_TO_FP32);
    QCOMPARE(ar.f32(c2.weight_in(ParamSeries::G))[5], 6.0f);
    QCOMPARE(ar.f32(c1.weight_in(ParamSeries::G))[5], 2.0f);
    run(GraphId::NAN_CHECK_AND_GRAD_SCALING);
    QCOMPARE(slot(ar.scalars, ScalarSlot::OVERFLOW), 0.0f);
    QCOMPARE(ar.f32(c2.weight_in(ParamSeries::G))[5], 1.5f);
    QCOMPARE(slot(ar.scalars, ScalarSlot::CLEAN_STEPS), 1.0f);
    run(GraphId::OPTIMIZER);
    QCOMPARE(ar.f32(c2.weight_in(ParamSeries::W))[5], 1.0f - 0.5f * 1.5f);
    QCOMPARE(ar.f32(c1.weight_in(ParamSeries::W))[0], 1.0f - 0.5f * 0.5f);
    run(GraphId::CAST_MAIN_FP32_TO_FP16);
    QCOMPARE(ar.f16(c2.weight_in(ParamSeries::A))[5], cpu::float_to_half_bits(0.25f));

    // An overflowing half gradient: the check trips, the scale halves, SGD skips.
    run(GraphId::ZERO_GRAD);
    fill_half(c2.weight_in(ParamSeries::H), 1e6f);  // inf in FP16
    run(GraphId::CAST_DEEP_GRAD_FP16_TO_FP32);
    run(GraphId::NAN_CHECK_AND_GRAD_SCALING);
    QCOMPARE(slot(ar.scalars, ScalarSlot::OVERFLOW), 1.0f);
    QCOMPARE(slot(ar.scalars, ScalarSlot::LOSS_SCALE), 2.0f);
    run(GraphId::OPTIMIZER);
    QCOMPARE(ar.f32(c2.weight_in(ParamSeries::W))[5], 0.25f);
  }
};

QTEST_APPLESS_MAIN(TestCpuRangeKernels)
#include "test_cpu_range_kernels.moc"

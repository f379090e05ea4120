// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the CPU RANGE kernels and scalar ops, called the way the runtime calls them.
//
// On a real, finalized MemoryPlan with a zeroed arena and SpanArgs from
// region_range: clears and copies, the AMP casts (bit-exact round to nearest
// even), scaling and the NaN check, BN inference parameters, EMA, SGD/Adam/LARS
// against hand computations, loss scale and Adam bias correction. The last
// tests run the compiler's own update graphs on its own plan.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cpu/kernels/optimizers.h"
#include "backends/cpu/kernels/range_ops.h"
#include "compile/compiler.h"
#include "model_builder.h"
#include "resolved_params.h"

using namespace tr;

namespace {

constexpr ParamSeries kSeries[] = {ParamSeries::W, ParamSeries::E, ParamSeries::A, ParamSeries::G,
                                   ParamSeries::H, ParamSeries::M, ParamSeries::V};

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

// Parameter ids per series of one trainable tensor.
struct Param {
  DTensorId s[7];
  DTensorId operator[](ParamSeries series) const { return s[static_cast<size_t>(series)]; }
};

// A model the way the compiler allocates it: conv1 (first, with bias),
// bn1, conv2 (deep, with bias), bn2, fc; every parameter in every series,
// BN statistics, LARS norms, the result blocks and the scalars.
struct Fixture {
  ModelGraph model;
  MemoryPlan plan;
  Param conv1_w, conv1_b, bn1_w, bn1_b, conv2_w, conv2_b, bn2_w, bn2_b, fc_w, fc_b;
  DTensorId bn1_stats[6],
      bn2_stats[6];  // PREV_MEAN, PREV_VAR, NEXT_MEAN, NEXT_VAR, EQ_SCALE, EQ_BIAS
  DTensorId conv1_n, conv2_n, fc_n;
  DTensorId result, result_acc, scalars;

  Param param(ParamKind kind, const Shape& shape, const std::string& name, int owner) {
    Param p{};
    for (ParamSeries s : kSeries)
      p.s[static_cast<size_t>(s)] = plan.alloc_param(s, kind, shape, name, owner);
    return p;
  }
  void bn(DTensorId* ids, int64_t c, const std::string& name, int owner) {
    const Region rs[] = {Region::B_PREV_MEAN, Region::B_PREV_VAR, Region::B_NEXT_MEAN,
                         Region::B_NEXT_VAR,  Region::B_EQ_SCALE, Region::B_EQ_BIAS};
    for (int i = 0; i < 6; ++i)
      ids[i] = plan.alloc_bn_stat(rs[i], c, name + std::to_string(i), owner);
  }

  Fixture() {
    const char* ids[] = {"input", "conv1", "bn1", "conv2", "bn2", "fc"};
    const LayerType types[] = {LayerType::Input,  LayerType::Conv2d,      LayerType::BatchNorm2d,
                               LayerType::Conv2d, LayerType::BatchNorm2d, LayerType::Linear};
    for (int i = 0; i < 6; ++i) {
      LayerNode n;
      n.id = ids[i];
      n.type = types[i];
      model.nodes.push_back(n);
    }
    model.nodes[2].params.eps = 1e-3;
    model.nodes[4].params.eps = 0.25;

    scalars = plan.alloc_scalars(static_cast<int64_t>(ScalarSlot::COUNT), "scalars");
    result = plan.alloc_result(false);
    result_acc = plan.alloc_result(true);
    conv1_w = param(ParamKind::FIRST_CONV, {4, 3, 3, 2}, "conv1.weight", 1);
    conv1_b = param(ParamKind::FIRST_CONV, {1, 1, 1, 4}, "conv1.bias", 1);
    conv1_n = plan.alloc_lars_norm(ParamKind::FIRST_CONV, "conv1.norms", 1);
    bn1_w = param(ParamKind::BN_WEIGHT, {1, 1, 1, 4}, "bn1.weight", 2);
    bn1_b = param(ParamKind::BN_BIAS, {1, 1, 1, 4}, "bn1.bias", 2);
    bn(bn1_stats, 4, "bn1.stat", 2);
    conv2_w = param(ParamKind::DEEP_CONV, {3, 1, 1, 4}, "conv2.weight", 3);
    conv2_b = param(ParamKind::DEEP_CONV, {1, 1, 1, 3}, "conv2.bias", 3);
    conv2_n = plan.alloc_lars_norm(ParamKind::DEEP_CONV, "conv2.norms", 3);
    bn2_w = param(ParamKind::BN_WEIGHT, {1, 1, 1, 3}, "bn2.weight", 4);
    bn2_b = param(ParamKind::BN_BIAS, {1, 1, 1, 3}, "bn2.bias", 4);
    bn(bn2_stats, 3, "bn2.stat", 4);
    fc_w = param(ParamKind::FC_WEIGHT, {5, 1, 1, 3}, "fc.weight", 5);
    fc_b = param(ParamKind::FC_BIAS, {1, 1, 1, 5}, "fc.bias", 5);
    fc_n = plan.alloc_lars_norm(ParamKind::FC_WEIGHT, "fc.norms", 5);
    plan.finalize();
  }
  std::vector<const Param*> params() const {
    return {&conv1_w, &conv1_b, &bn1_w, &bn1_b, &conv2_w, &conv2_b, &bn2_w, &bn2_b, &fc_w, &fc_b};
  }
};

RegionSpan all_of(ParamSeries s) {
  return {param_region(s, ParamKind::BN_BIAS), param_region(s, ParamKind::DEEP_CONV)};
}

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
  // ---- plain span work -----------------------------------------------------

  void clearCopyAccumulate() {
    Fixture fx;
    Arena ar(fx.plan);
    const SpanArg g = ar.span(Region::G_BN_BIAS, Region::G_DEEP_CONV);
    float* gp = g.f32();
    for (uint64_t i = 0; i < g.floats(); ++i) gp[i] = 1.0f;  // padding too
    cpu::range_clear(ar.args({}, {g}));
    for (uint64_t i = 0; i < g.floats(); ++i) QCOMPARE(gp[i], 0.0f);

    ar.fill(fx.bn1_stats[2], 3.0f);  // NEXT_MEAN
    ar.fill(fx.bn2_stats[3], 4.0f);  // NEXT_VAR
    cpu::range_copy(ar.args({ar.span(Region::B_NEXT_MEAN, Region::B_NEXT_VAR)},
                            {ar.span(Region::B_PREV_MEAN, Region::B_PREV_VAR)}));
    QCOMPARE(ar.f32(fx.bn1_stats[0])[3], 3.0f);
    QCOMPARE(ar.f32(fx.bn2_stats[1])[2], 4.0f);
    QCOMPARE(ar.f32(fx.bn2_stats[0])[0], 0.0f);

    const float r[] = {2.5f, 3.0f, 4.0f, 8.0f};
    std::memcpy(ar.f32(fx.result), r, sizeof r);
    const KernelArgs acc =
        ar.args({ar.span(Region::R_RESULT, Region::R_RESULT)},
                {ar.span(Region::R_RESULT_ACCUMULATED, Region::R_RESULT_ACCUMULATED)});
    cpu::range_accumulate(acc);
    cpu::range_accumulate(acc);
    for (int i = 0; i < 4; ++i) QCOMPARE(ar.f32(fx.result_acc)[i], 2 * r[i]);
  }

  void scaleUnscalesUnlessOverflowed() {
    Fixture fx;
    Arena ar(fx.plan);
    ar.fill(fx.fc_w[ParamSeries::G], 8.0f);
    ar.fill(fx.bn1_b[ParamSeries::G], -4.0f);
    slot(ar.scalars, ScalarSlot::INV_LOSS_SCALE) = 0.25f;
    const SpanArg g = ar.span(Region::G_BN_BIAS, Region::G_DEEP_CONV);
    const KernelArgs a = ar.args({g}, {g});
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::range_scale(a);
    QCOMPARE(ar.f32(fx.fc_w[ParamSeries::G])[0], 8.0f);
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 0.0f;
    cpu::range_scale(a);
    QCOMPARE(ar.f32(fx.fc_w[ParamSeries::G])[14], 2.0f);
    QCOMPARE(ar.f32(fx.bn1_b[ParamSeries::G])[3], -1.0f);
  }

  void nanCheckSetsButNeverClearsTheFlag() {
    Fixture fx;
    Arena ar(fx.plan);
    ar.fill(fx.conv2_w[ParamSeries::G], 1e30f);
    const KernelArgs a = ar.args({ar.span(Region::G_BN_BIAS, Region::R_RESULT)}, {});
    float& flag = slot(ar.scalars, ScalarSlot::OVERFLOW);
    cpu::range_nan_check(a);
    QCOMPARE(flag, 0.0f);
    ar.f32(fx.conv2_b[ParamSeries::G])[1] = std::numeric_limits<float>::infinity();
    cpu::range_nan_check(a);
    QCOMPARE(flag, 1.0f);
    ar.f32(fx.conv2_b[ParamSeries::G])[1] = 0.0f;
    cpu::range_nan_check(a);
    QCOMPARE(flag, 1.0f);  // the runtime clears it per step, not the check
    flag = 0.0f;
    ar.f32(fx.result)[0] = std::numeric_limits<float>::quiet_NaN();  // a NaN loss
    cpu::range_nan_check(a);
    QCOMPARE(flag, 1.0f);
    flag = 0.0f;
    ar.f32(fx.result)[0] = -std::numeric_limits<float>::infinity();
    cpu::range_nan_check(a);
    QCOMPARE(flag, 1.0f);
  }

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

  void castSpansRoundTrip() {
    Fixture fx;
    Arena ar(fx.plan);
    const SpanArg w = ar.span(Region::W_BN_BIAS, Region::W_DEEP_CONV);
    const SpanArg a16 = ar.span(Region::A_BN_BIAS, Region::A_DEEP_CONV);
    const SpanArg h16 = ar.span(Region::H_BN_BIAS, Region::H_DEEP_CONV);
    const SpanArg g = ar.span(Region::G_BN_BIAS, Region::G_DEEP_CONV);
    QCOMPARE(w.bytes, 2 * a16.bytes);
    const float inf = std::numeric_limits<float>::infinity();
    struct Case {
      float in;
      uint16_t half;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3C00},
        {-2.0f, 0xC000},
        {0.1f, 0x2E66},
        {65504.0f, 0x7BFF},  // largest half
        {65519.0f, 0x7BFF},  // rounds down
        {65520.0f, 0x7C00},  // the tie rounds to even: infinity
        {1e6f, 0x7C00},      // overflow
        {-1e6f, 0xFC00},
        {inf, 0x7C00},
        {-inf, 0xFC00},
        {std::ldexp(1.0f, -24), 0x0001},         // smallest subnormal
        {std::ldexp(1.0f, -25), 0x0000},         // half of it: tie to even zero
        {std::ldexp(1.5f, -25), 0x0001},         // above the tie
        {std::ldexp(3.0f, -25), 0x0002},         // 1.5 ulp: tie to even 2
        {std::ldexp(1023.0f, -24), 0x03FF},      // largest subnormal
        {std::ldexp(1.0f, -14), 0x0400},         // smallest normal
        {1.0f + std::ldexp(1.0f, -11), 0x3C00},  // tie: stays even
        {1.0f + std::ldexp(3.0f, -11), 0x3C02},  // tie: up to even
        {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3C01},
    };
    const size_t n = std::size(cases);
    float* wp = w.f32();
    for (size_t i = 0; i < n; ++i) wp[i] = cases[i].in;
    wp[n] = std::numeric_limits<float>::quiet_NaN();
    wp[n + 1] = -std::numeric_limits<float>::quiet_NaN();
    // The rest of the span (weights of later tensors, padding) gets random normals.
    std::mt19937 rng(31);
    std::normal_distribution<float> normal(0.0f, 100.0f);
    for (uint64_t i = n + 2; i < w.floats(); ++i) wp[i] = normal(rng);

    cpu::range_cast_fp32_to_fp16(ar.args({w}, {a16}));
    const uint16_t* ap = static_cast<const uint16_t*>(a16.data);
    for (size_t i = 0; i < n; ++i)
      QVERIFY2(ap[i] == cases[i].half,
               qPrintable(QString("case %1: 0x%2").arg(i).arg(ap[i], 4, 16, QChar('0'))));
    QVERIFY((ap[n] & 0x7C00) == 0x7C00 && (ap[n] & 0x3FF) != 0);
    QVERIFY((ap[n + 1] & 0xFC00) == 0xFC00 && (ap[n + 1] & 0x3FF) != 0);
    for (uint64_t i = n + 2; i < w.floats(); ++i) QCOMPARE(ap[i], half_reference(wp[i]));

    // The gradient direction: H (FP16) -> G (FP32), exact.
    std::memcpy(h16.data, a16.data, a16.bytes);
    cpu::range_cast_fp16_to_fp32(ar.args({h16}, {g}));
    const float* gp = g.f32();
    QCOMPARE(g.floats(), w.floats());
    for (size_t i = 0; i < n; ++i) {
      const float want = cases[i].half == 0x7C00   ? inf
                         : cases[i].half == 0xFC00 ? -inf
                                                   : static_cast<float>(half_value(cases[i].half));
      QCOMPARE(std::bit_cast<uint32_t>(gp[i]), std::bit_cast<uint32_t>(want));
    }
    QCOMPARE(gp[5], 65504.0f);
    QVERIFY(std::isnan(gp[n]) && std::isnan(gp[n + 1]) && std::signbit(gp[n + 1]));
    for (uint64_t i = n + 2; i < g.floats(); ++i)
      QCOMPARE(static_cast<double>(gp[i]), half_value(ap[i]));
  }

  // ---- BN inference parameters and EMA -------------------------------------

  void bnEqParamsPerLayerWithItsOwnEps() {
    Fixture fx;
    Arena ar(fx.plan);
    ar.model = &fx.model;
    for (int c = 0; c < 4; ++c) {
      ar.f32(fx.bn1_stats[0])[c] = static_cast<float>(c);         // running mean
      ar.f32(fx.bn1_stats[1])[c] = 1.0f + static_cast<float>(c);  // running var
      ar.f32(fx.bn1_w[ParamSeries::W])[c] = 2.0f;
      ar.f32(fx.bn1_b[ParamSeries::W])[c] = 0.5f;
    }
    for (int c = 0; c < 3; ++c) {
      ar.f32(fx.bn2_stats[0])[c] = -1.0f;
      ar.f32(fx.bn2_stats[1])[c] = 0.75f;  // + eps 0.25 = 1
      ar.f32(fx.bn2_w[ParamSeries::W])[c] = static_cast<float>(c);
      ar.f32(fx.bn2_b[ParamSeries::W])[c] = 1.0f;
    }
    cpu::range_bn_eq_params(ar.args({ar.span(Region::B_PREV_MEAN, Region::B_PREV_VAR),
                                     ar.span(Region::W_BN_BIAS, Region::W_BN_WEIGHT)},
                                    {ar.span(Region::B_EQ_SCALE, Region::B_EQ_BIAS)}));
    for (int c = 0; c < 4; ++c) {
      const double sc = 2.0 / std::sqrt(1.0 + c + 1e-3);
      QVERIFY(std::fabs(ar.f32(fx.bn1_stats[4])[c] - sc) < 1e-6);
      QVERIFY(std::fabs(ar.f32(fx.bn1_stats[5])[c] - (0.5 - c * sc)) < 1e-6);
    }
    for (int c = 0; c < 3; ++c) {
      QCOMPARE(ar.f32(fx.bn2_stats[4])[c], static_cast<float>(c));
      QCOMPARE(ar.f32(fx.bn2_stats[5])[c], 1.0f + static_cast<float>(c));
    }
  }

  void emaUpdate() {
    Fixture fx;
    Arena ar(fx.plan);
    TrainingSpec t;
    t.ema_decay = 0.9;
    ar.training = &t;
    ar.fill(fx.fc_w[ParamSeries::W], 3.0f);
    ar.fill(fx.fc_w[ParamSeries::E], 1.0f);
    ar.fill(fx.conv1_b[ParamSeries::W], -1.0f);
    const KernelArgs a = ar.args({ar.span(Region::W_BN_BIAS, Region::W_DEEP_CONV)},
                                 {ar.span(Region::E_BN_BIAS, Region::E_DEEP_CONV)});
    cpu::range_ema_update(a);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::E])[7] - 1.2f) < 1e-6f);
    QVERIFY(std::fabs(ar.f32(fx.conv1_b[ParamSeries::E])[0] + 0.1f) < 1e-6f);
    cpu::range_ema_update(a);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::E])[7] - (0.9 * 1.2 + 0.3)) < 1e-6);
  }

  // ---- optimizers ----------------------------------------------------------

  void sgdMomentumAndNesterovOverThreeSteps() {
    // w0 = 1, g = 0.5 every step, lr 0.1, momentum 0.9, weight decay 0.01.
    const double plain[] = {0.949, 0.852151, 0.714134749};
    const double nesterov[] = {0.9031, 0.76507411, 0.590209958191};
    for (bool nest : {false, true}) {
      Fixture fx;
      Arena ar(fx.plan);
      TrainingSpec t;
      t.optimizer.momentum = 0.9;
      t.optimizer.weight_decay = 0.01;
      t.optimizer.nesterov = nest;
      ar.training = &t;
      for (const Param* p : fx.params()) {
        ar.fill((*p)[ParamSeries::W], 1.0f);
        ar.fill((*p)[ParamSeries::G], 0.5f);
      }
      slot(ar.scalars, ScalarSlot::LR) = 0.1f;
      const KernelArgs a = ar.args({make_span(fx.plan, ar.base(), all_of(ParamSeries::W)),
                                    make_span(fx.plan, ar.base(), all_of(ParamSeries::G)),
                                    make_span(fx.plan, ar.base(), all_of(ParamSeries::M))},
                                   {make_span(fx.plan, ar.base(), all_of(ParamSeries::W)),
                                    make_span(fx.plan, ar.base(), all_of(ParamSeries::M))});
      for (int step = 0; step < 3; ++step) {
        slot(ar.scalars, ScalarSlot::UPDATES) = static_cast<float>(step + 1);
        cpu::sgd_update(a);
        const double want = (nest ? nesterov : plain)[step];
        for (const Param* p : fx.params()) {
          const DTensor& d = fx.plan.get_dtensor((*p)[ParamSeries::W]);
          for (int64_t i = 0; i < d.shape.elements(); ++i)
            QVERIFY2(std::fabs(ar.f32(d.id)[i] - want) < 1e-6,
                     qPrintable(QString("%1 step %2").arg(d.name.c_str()).arg(step)));
        }
      }
      // Padding between tensors saw zero gradients and stays zero.
      const SpanArg w = make_span(fx.plan, ar.base(), all_of(ParamSeries::W));
      const DTensor& last = fx.plan.get_dtensor(fx.conv2_b[ParamSeries::W]);
      QCOMPARE(w.f32_at(last)[last.shape.elements()], 0.0f);
    }
  }

  void sgdWithoutMomentumAndOverflowSkip() {
    Fixture fx;
    Arena ar(fx.plan);
    TrainingSpec t;
    t.optimizer.momentum = 0.0;
    t.optimizer.weight_decay = 0.5;
    ar.training = &t;
    ar.fill(fx.fc_w[ParamSeries::W], 2.0f);
    ar.fill(fx.fc_w[ParamSeries::G], 1.0f);
    slot(ar.scalars, ScalarSlot::LR) = 0.1f;
    slot(ar.scalars, ScalarSlot::UPDATES) = 6.0f;
    const KernelArgs a = ar.args({make_span(fx.plan, ar.base(), all_of(ParamSeries::W)),
                                  make_span(fx.plan, ar.base(), all_of(ParamSeries::G))},
                                 {make_span(fx.plan, ar.base(), all_of(ParamSeries::W))});
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::sgd_update(a);
    QCOMPARE(ar.f32(fx.fc_w[ParamSeries::W])[0], 2.0f);
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 0.0f;
    cpu::sgd_update(a);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::W])[0] - (2.0 - 0.1 * (1.0 + 1.0))) < 1e-6);
  }

  void adamTwoStepsWithBiasCorrection() {
    Fixture fx;
    Arena ar(fx.plan);
    TrainingSpec t;
    t.optimizer.kind = OptimizerKind::Adam;
    t.optimizer.beta1 = 0.9;
    t.optimizer.beta2 = 0.999;
    t.optimizer.adam_eps = 1e-8;
    t.optimizer.weight_decay = 0.1;
    ar.training = &t;
    slot(ar.scalars, ScalarSlot::LR) = 0.01f;
    for (const Param* p : fx.params()) ar.fill((*p)[ParamSeries::W], 1.0f);
    auto sp = [&](ParamSeries s) { return make_span(fx.plan, ar.base(), all_of(s)); };
    const KernelArgs a =
        ar.args({sp(ParamSeries::W), sp(ParamSeries::G), sp(ParamSeries::M), sp(ParamSeries::V)},
                {sp(ParamSeries::W), sp(ParamSeries::M), sp(ParamSeries::V)});
    const float grads[] = {0.5f, -0.25f};
    const double want_w[] = {0.9900000001666667, 0.9853191993058599};
    const double want_m[] = {0.06, 0.0389};
    const double want_v[] = {0.00036, 0.000382441};
    for (int step = 0; step < 2; ++step) {
      for (const Param* p : fx.params()) ar.fill((*p)[ParamSeries::G], grads[step]);
      slot(ar.scalars, ScalarSlot::UPDATES) = static_cast<float>(step + 1);
      cpu::adam_bias_correction(ar.args({}, {}));
      QVERIFY(std::fabs(slot(ar.scalars, ScalarSlot::ADAM_CORR1) - (1 - std::pow(0.9, step + 1))) <
              1e-7);
      QVERIFY(std::fabs(slot(ar.scalars, ScalarSlot::ADAM_CORR2) -
                        (1 - std::pow(0.999, step + 1))) < 1e-7);
      cpu::adam_update(a);
      for (const Param* p : fx.params()) {
        QVERIFY(std::fabs(ar.f32((*p)[ParamSeries::W])[0] - want_w[step]) < 2e-6);
        QVERIFY(std::fabs(ar.f32((*p)[ParamSeries::M])[0] - want_m[step]) < 1e-7);
        QVERIFY(std::fabs(ar.f32((*p)[ParamSeries::V])[0] - want_v[step]) < 1e-9);
      }
    }
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::adam_update(a);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::W])[0] - want_w[1]) < 2e-6);
  }

  void larsTrustRatio() {
    Fixture fx;
    Arena ar(fx.plan);
    TrainingSpec t;
    t.optimizer.kind = OptimizerKind::LARS;
    t.optimizer.momentum = 0.9;
    t.optimizer.weight_decay = 0.01;
    t.optimizer.trust_coefficient = 0.001;
    ar.training = &t;
    slot(ar.scalars, ScalarSlot::LR) = 0.1f;
    ar.fill(fx.fc_w[ParamSeries::W], 2.0f);
    ar.fill(fx.fc_w[ParamSeries::G], 1.0f);
    ar.fill(fx.fc_b[ParamSeries::W], 1.0f);
    ar.fill(fx.fc_b[ParamSeries::G], 1.0f);
    auto sp = [&](ParamSeries s) {
      return ar.span(param_region(s, ParamKind::FC_BIAS), param_region(s, ParamKind::FC_WEIGHT));
    };
    const SpanArg n = ar.span(Region::N_FC, Region::N_FC);
    cpu::lars_norms(ar.args({sp(ParamSeries::W), sp(ParamSeries::G)}, {n}));
    // fc.weight has 15 elements: ||w|| = 2 sqrt(15), ||g|| = sqrt(15).
    QVERIFY(std::fabs(ar.f32(fx.fc_n)[0] - 2 * std::sqrt(15.0)) < 1e-5);
    QVERIFY(std::fabs(ar.f32(fx.fc_n)[1] - std::sqrt(15.0)) < 1e-5);

    const KernelArgs u = ar.args({sp(ParamSeries::W), sp(ParamSeries::G), sp(ParamSeries::M), n},
                                 {sp(ParamSeries::W), sp(ParamSeries::M)});
    cpu::lars_update(u);
    // Weight: ratio 0.001 * 2 / (1 + 0.01 * 2) = 0.002 / 1.02; the decayed
    // gradient 1.02 makes the buffer 0.002 and the step lr * 0.002.
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::M])[4] - 0.002) < 1e-8);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::W])[4] - 1.9998) < 1e-6);
    // Bias: ratio 1, plain momentum SGD with weight decay.
    QVERIFY(std::fabs(ar.f32(fx.fc_b[ParamSeries::W])[2] - (1.0 - 0.1 * 1.01)) < 1e-6);

    // Second step: momentum with the new ratio.
    slot(ar.scalars, ScalarSlot::UPDATES) = 2.0f;
    cpu::lars_norms(ar.args({sp(ParamSeries::W), sp(ParamSeries::G)}, {n}));
    cpu::lars_update(u);
    const double w1 = 1.9998;
    const double ratio = 0.001 * w1 / (1.0 + 0.01 * w1);
    const double m2 = 0.9 * 0.002 + ratio * (1.0 + 0.01 * w1);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::M])[0] - m2) < 1e-7);
    QVERIFY(std::fabs(ar.f32(fx.fc_w[ParamSeries::W])[0] - (w1 - 0.1 * m2)) < 1e-6);
  }

  void larsZeroNormsUseRatioOne() {
    Fixture fx;
    Arena ar(fx.plan);
    TrainingSpec t;
    t.optimizer.kind = OptimizerKind::LARS;
    t.optimizer.weight_decay = 0.0;
    ar.training = &t;
    slot(ar.scalars, ScalarSlot::LR) = 0.5f;
    ar.fill(fx.conv2_w[ParamSeries::G], 2.0f);  // w = 0: ||w|| = 0
    ar.fill(fx.conv2_b[ParamSeries::G], 4.0f);
    auto sp = [&](ParamSeries s) {
      const Region r = param_region(s, ParamKind::DEEP_CONV);
      return ar.span(r, r);
    };
    const SpanArg n = ar.span(Region::N_DEEP_CONV, Region::N_DEEP_CONV);
    cpu::lars_norms(ar.args({sp(ParamSeries::W), sp(ParamSeries::G)}, {n}));
    QCOMPARE(ar.f32(fx.conv2_n)[0], 0.0f);
    QVERIFY(std::fabs(ar.f32(fx.conv2_n)[1] - 2 * std::sqrt(12.0)) < 1e-5);
    cpu::lars_update(ar.args({sp(ParamSeries::W), sp(ParamSeries::G), sp(ParamSeries::M), n},
                             {sp(ParamSeries::W), sp(ParamSeries::M)}));
    QCOMPARE(ar.f32(fx.conv2_w[ParamSeries::W])[11], -1.0f);
    QCOMPARE(ar.f32(fx.conv2_b[ParamSeries::W])[2], -2.0f);
    slot(ar.scalars, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::lars_update(ar.args({sp(ParamSeries::W), sp(ParamSeries::G), sp(ParamSeries::M), n},
                             {sp(ParamSeries::W), sp(ParamSeries::M)}));
    QCOMPARE(ar.f32(fx.conv2_w[ParamSeries::W])[11], -1.0f);
  }

  // ---- scalar bookkeeping --------------------------------------------------

  void lossScaleHalvesOnOverflowAndGrowsAfterCleanSteps() {
    std::vector<float> s(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
    KernelArgs a;
    a.scalars = s.data();
    slot(s, ScalarSlot::LOSS_SCALE) = 8.0f;
    slot(s, ScalarSlot::CLEAN_STEPS) = 17.0f;
    slot(s, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::loss_scale_update(a);
    QCOMPARE(slot(s, ScalarSlot::LOSS_SCALE), 4.0f);
    QCOMPARE(slot(s, ScalarSlot::INV_LOSS_SCALE), 0.25f);
    QCOMPARE(slot(s, ScalarSlot::CLEAN_STEPS), 0.0f);
    slot(s, ScalarSlot::LOSS_SCALE) = 1.0f;
    cpu::loss_scale_update(a);
    QCOMPARE(slot(s, ScalarSlot::LOSS_SCALE), 1.0f);  // never below 1
    slot(s, ScalarSlot::OVERFLOW) = 0.0f;
    slot(s, ScalarSlot::LOSS_SCALE) = 1024.0f;
    for (int i = 0; i < kLossScaleGrowthInterval - 1; ++i) cpu::loss_scale_update(a);
    QCOMPARE(slot(s, ScalarSlot::LOSS_SCALE), 1024.0f);
    QCOMPARE(slot(s, ScalarSlot::CLEAN_STEPS), 1999.0f);
    cpu::loss_scale_update(a);
    QCOMPARE(slot(s, ScalarSlot::LOSS_SCALE), 2048.0f);
    QCOMPARE(slot(s, ScalarSlot::INV_LOSS_SCALE), 1.0f / 2048.0f);
    QCOMPARE(slot(s, ScalarSlot::CLEAN_STEPS), 0.0f);
  }

  void skippedStepsDoNotCountAsUpdates() {
    std::vector<float> s(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
    KernelArgs a;
    a.scalars = s.data();
    a.training = nullptr;
    cpu::count_update(a);
    QCOMPARE(slot(s, ScalarSlot::UPDATES), 1.0f);
    slot(s, ScalarSlot::OVERFLOW) = 1.0f;
    cpu::count_update(a);
    QCOMPARE(slot(s, ScalarSlot::UPDATES), 1.0f);
    slot(s, ScalarSlot::OVERFLOW) = 0.0f;
    cpu::count_update(a);
    QCOMPARE(slot(s, ScalarSlot::UPDATES), 2.0f);
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

// SPDX-License-Identifier: GPL-3.0-or-later
// Mixed precision on the CPU backend, end to end: an AMP project learns; an
// overflowing step is skipped (W, the momentum and the EMA untouched, the
// update count held) and halves the loss scale; a long run of skipped steps
// stops training with an error; clean steps grow it; the W -> A cast is one RANGE launch in the
// compiled graph, in the captured graph and in what runs, and leaves A equal
// to W rounded to FP16; the stream workspaces are sized at capture.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_graph.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cpu/kernels/optimizers.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "runtime/graph_capture.h"
#include "runtime/trainer.h"
#include "sixteen_bit_training.h"

using namespace tr;

namespace {

using test::copied_series;
using test::series;
using test::train_with;
using test::Trained;

Project amp_project() {
  return test::residual_bn_project(Precision::AMP);
}

float& scalar(Backend& b, const CompiledProject& cp, ScalarSlot s) {
  const uint64_t at = cp.plans.front().get_dtensor(cp.engine.scalars).offset;
  return reinterpret_cast<float*>(b.arena(0) + at)[static_cast<int>(s)];
}

std::vector<uint8_t> bytes_of(Backend& b, ByteRange r) {
  return {b.arena(0) + r.offset, b.arena(0) + r.end()};
}

// Whether every A tensor holds its W tensor rounded to FP16, bit for bit.
bool a_is_w_in_fp16(Backend& b, const CompiledProject& cp) {
  const ByteRange w = copied_series(cp, ParamSeries::W), a = series(cp, ParamSeries::A);
  const auto* wf = reinterpret_cast<const float*>(b.arena(0) + w.offset);
  const auto* ah = reinterpret_cast<const uint16_t*>(b.arena(0) + a.offset);
  for (uint64_t i = 0; i < a.bytes / 2; ++i)
    if (ah[i] != cpu::float_to_half_bits(wf[i])) return false;
  return true;
}

}  // namespace

class TestAmpTraining : public QObject {
  Q_OBJECT

 private slots:
  void ampLearns() {
    const Trained t =
        train_with(amp_project(), {}, [](int64_t, Backend&, const CompiledProject&) {});
    QCOMPARE(t.report.epochs.size(), size_t{3});
    const EpochReport& first = t.report.epochs.front();
    const EpochReport& last = t.report.epochs.back();
    QVERIFY2(last.train_loss < first.train_loss, qPrintable(QString::number(last.train_loss)));
    QVERIFY2(last.val_top1 > 0.6, qPrintable(QString::number(last.val_top1)));
    for (double l : t.losses) QVERIFY(std::isfinite(l));
  }

  void overflowSkipsTheStepAndHalvesTheScale() {
    TrainOptions o;
    o.max_steps = 3;
    o.validate = false;
    std::vector<uint8_t> w0, m0, a0, e0;
    float scale_before = 0;
    bool checked = false;
    Project p = amp_project();
    p.training.ema = true;
    train_with(p, o, [&](int64_t step, Backend& b, const CompiledProject& cp) {
      float& scale = scalar(b, cp, ScalarSlot::LOSS_SCALE);
      float& inv = scalar(b, cp, ScalarSlot::INV_LOSS_SCALE);
      if (step == 0) {
        QCOMPARE(scalar(b, cp, ScalarSlot::UPDATES), 1.0f);
        // The next step's scaled gradient is far beyond FP16's 65504.
        w0 = bytes_of(b, series(cp, ParamSeries::W));
        m0 = bytes_of(b, series(cp, ParamSeries::M));
        a0 = bytes_of(b, series(cp, ParamSeries::A));
        e0 = bytes_of(b, series(cp, ParamSeries::E));
        scale = std::ldexp(1.0f, 100);
        inv = std::ldexp(1.0f, -100);
        scale_before = scale;
      } else if (step == 1) {
        QCOMPARE(scalar(b, cp, ScalarSlot::OVERFLOW), 1.0f);
        QCOMPARE(scale, scale_before / 2);
        QCOMPARE(inv, 2 / scale_before);
        QCOMPARE(scalar(b, cp, ScalarSlot::CLEAN_STEPS), 0.0f);
        QVERIFY2(bytes_of(b, series(cp, ParamSeries::W)) == w0, "W changed on a skipped step");
        QVERIFY2(bytes_of(b, series(cp, ParamSeries::M)) == m0,
                 "momentum changed on a skipped step");
        QVERIFY2(bytes_of(b, series(cp, ParamSeries::A)) == a0, "A changed on a skipped step");
        QVERIFY2(bytes_of(b, series(cp, ParamSeries::E)) == e0, "EMA changed on a skipped step");
        QCOMPARE(scalar(b, cp, ScalarSlot::UPDATES), 1.0f);  // Adam's t does not count it
        // A scale that fits: the next step is clean and updates.
        scale = 1024.0f;
        inv = 1.0f / 1024.0f;
      } else if (step == 2) {
        QCOMPARE(scalar(b, cp, ScalarSlot::OVERFLOW), 0.0f);
        QCOMPARE(scale, 1024.0f);
        QCOMPARE(scalar(b, cp, ScalarSlot::CLEAN_STEPS), 1.0f);
        QCOMPARE(scalar(b, cp, ScalarSlot::UPDATES), 2.0f);
        QVERIFY2(bytes_of(b, series(cp, ParamSeries::W)) != w0, "a clean step did not update W");
        QVERIFY(a_is_w_in_fp16(b, cp));
        checked = true;
      }
    });
    QVERIFY(checked);
  }

  void endlessOverflowStopsTraining() {
    TrainOptions o;
    o.max_steps = 100;
    o.validate = false;
    int64_t last_step = -1;
    QString error;
    try {
      train_with(amp_project(), o, [&](int64_t step, Backend& b, const CompiledProject& cp) {
        // Every step overflows, whatever the halving does.
        scalar(b, cp, ScalarSlot::LOSS_SCALE) = std::ldexp(1.0f, 100);
        scalar(b, cp, ScalarSlot::INV_LOSS_SCALE) = std::ldexp(1.0f, -100);
        last_step = step;
      });
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.contains("32 steps in a row"), qPrintable(error));
    QVERIFY2(error.contains("lower the learning rate"), qPrintable(error));
    // Steps 1 to 32 overflow (the huge scale is set after step 0); the 32nd
    // skipped one stops training before it is reported.
    QCOMPARE(last_step, int64_t{31});
  }

  void cleanStepsGrowTheScale() {
    TrainOptions o;
    o.max_steps = 2;
    o.validate = false;
    bool checked = false;
    train_with(amp_project(), o, [&](int64_t step, Backend& b, const CompiledProject& cp) {
      float& scale = scalar(b, cp, ScalarSlot::LOSS_SCALE);
      if (step == 0) {
        scale = 256.0f;
        scalar(b, cp, ScalarSlot::INV_LOSS_SCALE) = 1.0f / 256.0f;
        scalar(b, cp, ScalarSlot::CLEAN_STEPS) = static_cast<float>(kLossScaleGrowthInterval - 1);
      } else {
        QCOMPARE(scalar(b, cp, ScalarSlot::OVERFLOW), 0.0f);
        QCOMPARE(scale, 512.0f);
        QCOMPARE(scalar(b, cp, ScalarSlot::INV_LOSS_SCALE), 1.0f / 512.0f);
        QCOMPARE(scalar(b, cp, ScalarSlot::CLEAN_STEPS), 0.0f);
        checked = true;
      }
    });
    QVERIFY(checked);
  }

  void masterToHalfCastIsOneLaunch() {
    const CompiledProject cp = compile_project(amp_project());
    // Compiled: one RANGE node over W into all of A, exactly half its bytes
    // (batch norm's scale and shift stay FP32: W's BN regions have no copy).
    const ComputationGraph* g = cp.find_graph(GraphId::CAST_MAIN_FP32_TO_FP16, 0);
    QVERIFY(g);
    QCOMPARE(g->nodes.size(), size_t{1});
    const GraphNode& n = g->nodes.front();
    QCOMPARE(n.kind, NodeKind::RANGE);
    QCOMPARE(n.range_op, RangeOp::CAST_FP32_TO_FP16);
    QCOMPARE(n.in_spans.size(), size_t{1});
    QCOMPARE(n.out_spans.size(), size_t{1});
    QVERIFY(n.in_spans[0] == (RegionSpan{Region::W_FC_BIAS, Region::W_DEEP_CONV}));
    QVERIFY(n.out_spans[0] == (RegionSpan{Region::A_FC_BIAS, Region::A_DEEP_CONV}));
    for (const MemoryPlan& plan : cp.plans) {
      const ByteRange w = plan.region_range(Region::W_FC_BIAS, Region::W_DEEP_CONV);
      const ByteRange a = plan.region_range(Region::A_BN_BIAS, Region::A_DEEP_CONV);
      QVERIFY(a.bytes > 0);
      QCOMPARE(w.bytes, 2 * a.bytes);
    }

    // Captured: one kernel launch.
    auto b = cpu::make_cpu_backend({});
    b->allocate_arenas(cp.bytes_per_device());
    EventPool pool(*b, 0, capture_events_needed(*g));
    const ResolvedGraph rg = resolve_graph(cp, *g, 0, b->arena(0), 0, 1);
    const cpu::CpuGraph* cg = cpu::captured_graph(*b, 0, capture_graph(*b, cp, rg, pool));
    int launches = 0;
    for (const cpu::CapturedNode& c : cg->nodes) launches += c.empty ? 0 : 1;
    QCOMPARE(launches, 1);

    // What runs: one span per step, and A is W in FP16 after every step.
    TrainOptions o;
    o.max_steps = 4;
    o.validate = false;
    o.profile_begin = 1;
    o.profile_end = 4;
    int equal_after = 0;
    const Trained t =
        train_with(amp_project(), o, [&](int64_t, Backend& backend, const CompiledProject& c) {
          equal_after += a_is_w_in_fp16(backend, c) ? 1 : 0;
        });
    QCOMPARE(equal_after, 4);
    int casts = 0;
    for (const ProfileSpan& s : t.report.profile) {
      if (s.tag.graph != GraphId::CAST_MAIN_FP32_TO_FP16) continue;
      ++casts;
      QVERIFY2(s.tag.label.find("CAST_FP32_TO_FP16") != std::string::npos, s.tag.label.c_str());
    }
    QCOMPARE(casts, 3);  // steps 1, 2 and 3
  }

  void workspacesAreSizedAtCapture() {
    Project p = amp_project();
    for (const Precision precision : {Precision::FP32, Precision::AMP}) {
      p.training.precision = precision;
      const CompiledProject cp = compile_project(p);
      auto b = cpu::make_cpu_backend({});
      b->allocate_arenas(cp.bytes_per_device());
      const ComputationGraph* g = cp.find_graph(GraphId::DEEP_FWD_BWD, 0);
      EventPool pool(*b, 0, capture_events_needed(*g));
      const ResolvedGraph rg = resolve_graph(cp, *g, 0, b->arena(0), 0, 1);
      const GraphHandle h = capture_graph(*b, cp, rg, pool);
      std::vector<uint64_t> sized;
      for (int s = 0; s < kNumStreams; ++s)
        sized.push_back(cpu::stream_workspace_bytes(*b, 0, static_cast<StreamKind>(s)));
      const bool amp = precision == Precision::AMP;
      // Convolutions on COMP_1, batch norm and pooling on COMP_2, activations on COMP_3.
      for (StreamKind s : {StreamKind::COMP_1, StreamKind::COMP_2, StreamKind::COMP_3})
        QCOMPARE(sized[static_cast<size_t>(s)] > 0, amp);
      QCOMPARE(sized[static_cast<size_t>(StreamKind::TRANS)], uint64_t{0});
      QCOMPARE(sized[static_cast<size_t>(StreamKind::UPDATE)], uint64_t{0});
      // Replays find their workspace large enough: nothing grows.
      for (int k = 0; k < 2; ++k) b->launch_graph(0, StreamKind::COMP_1, h);
      b->synchronize(0);
      for (int s = 0; s < kNumStreams; ++s)
        QCOMPARE(cpu::stream_workspace_bytes(*b, 0, static_cast<StreamKind>(s)),
                 sized[static_cast<size_t>(s)]);
    }
  }
};

QTEST_APPLESS_MAIN(TestAmpTraining)
#include "test_amp_training.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Lifetimes of the per-step tensors over a step's node order: every feature
// and gradient slot a training step uses is touched, a gradient lives only
// in the backward, a validation pass touches no gradient, and the peak live
// set is what a sweep over the positions finds, never more than the plan.
#include <QtTest>
#include <string>

#include <renaissance/project_io.h>
#include "compile/compiler.h"
#include "compile/lifetimes.h"

using namespace tr;

namespace {

CompiledProject compiled(const char* name, const CompileOptions& options = {}) {
  return compile_project(load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json"),
                         options);
}

bool is_gradient(Region r) {
  return r == Region::F_GRAD_SLOT_FP32 || r == Region::F_GRAD_SLOT_FP16;
}

}  // namespace

class TestLifetimes : public QObject {
  Q_OBJECT

 private slots:
  void trainingStepTouchesEveryStepTensor_data() {
    QTest::addColumn<QString>("project");
    for (const char* p : {"lenet-fashion", "cnn-bn-fashion", "resnet8-fashion"})
      QTest::newRow(p) << QString::fromLatin1(p);
  }

  void trainingStepTouchesEveryStepTensor() {
    QFETCH(QString, project);
    const CompiledProject cp = compiled(project.toLatin1().constData());
    const int train = cp.variant_index(VariantKind::Train);
    const StepLifetimes life = step_lifetimes(cp, train);
    const MemoryPlan& plan = cp.plans[static_cast<size_t>(train)];
    QVERIFY(!life.order.empty());
    // The first backward position: the first node of DEEP_FWD_BWD that
    // writes a gradient slot.
    int backward = -1;
    for (const TensorLifetime& l : life.tensors) {
      const DTensor& t = plan.get_dtensor(l.id);
      QVERIFY2(is_step_local(t.region), t.name.c_str());
      if (t.region == Region::T_SCRATCH) continue;
      QVERIFY2(l.first >= 0 && l.first <= l.last, t.name.c_str());
      QCOMPARE(l.bytes, t.device_bytes());
      if (is_gradient(t.region) && (backward < 0 || l.first < backward)) backward = l.first;
    }
    QVERIFY(backward > 0);
    for (const TensorLifetime& l : life.tensors) {
      const DTensor& t = plan.get_dtensor(l.id);
      // A gradient slot is written in the backward, never before it.
      if (is_gradient(t.region)) QVERIFY2(l.first >= backward, t.name.c_str());
    }
    // The loss's input (the last feature) is read by the loss's backward:
    // the forward's features stay live into the backward.
    int lives_into_backward = 0;
    for (const TensorLifetime& l : life.tensors)
      if (!is_gradient(plan.get_dtensor(l.id).region) && l.first >= 0 && l.first < backward &&
          l.last >= backward)
        ++lives_into_backward;
    QVERIFY(lives_into_backward > 0);
  }

  void validationTouchesNoGradient() {
    const CompiledProject cp = compiled("cnn-bn-fashion");
    const int val = cp.variant_index(VariantKind::Validation);
    QVERIFY(val >= 0);
    const StepLifetimes life = step_lifetimes(cp, val);
    const MemoryPlan& plan = cp.plans[static_cast<size_t>(val)];
    int features = 0;
    for (const TensorLifetime& l : life.tensors) {
      const DTensor& t = plan.get_dtensor(l.id);
      if (is_gradient(t.region)) QVERIFY2(l.first < 0, t.name.c_str());
      if (t.region == Region::F_FEATURE_FP32 && l.first >= 0) ++features;
    }
    QVERIFY(features > 0);
    for (const StepPosition& p : life.order)
      QVERIFY(p.graph != GraphId::DEEP_FWD_BWD && p.graph != GraphId::OPTIMIZER);
  }

  void peakIsTheLargestLiveSetAndBelowThePlan_data() {
    QTest::addColumn<QString>("project");
    for (const char* p : {"lenet-fashion", "resnet8-fashion", "resnet20"})
      QTest::newRow(p) << QString::fromLatin1(p);
  }

  void peakIsTheLargestLiveSetAndBelowThePlan() {
    QFETCH(QString, project);
    // Against the plan before lifetimes, where every tensor has its own bytes.
    CompileOptions unpacked;
    unpacked.pack_memory = false;
    const CompiledProject cp = compiled(project.toLatin1().constData(), unpacked);
    for (int v = 0; v < static_cast<int>(cp.variants.size()); ++v) {
      const StepLifetimes life = step_lifetimes(cp, v);
      uint64_t best = 0;
      int at = -1;
      for (int p = 0; p < static_cast<int>(life.order.size()); ++p) {
        uint64_t live = 0;
        for (const TensorLifetime& l : life.tensors)
          if (l.first >= 0 && l.first <= p && p <= l.last) live += l.bytes;
        if (live > best) best = live, at = p;
      }
      QCOMPARE(life.peak_bytes, best);
      QCOMPARE(life.peak_position, at);
      QVERIFY(life.peak_bytes > 0);
      QVERIFY(life.peak_bytes <= life.planned_bytes);
      QVERIFY(life.describe(cp.project, at)
                  .find(graph_id_name(life.order[static_cast<size_t>(at)].graph)) == 0);
    }
    // What a plan by lifetime can save: the training step's peak is well
    // below the slots the unpacked plan gives its per-step tensors.
    const int train = cp.variant_index(VariantKind::Train);
    const StepLifetimes life = step_lifetimes(cp, train);
    QVERIFY2(life.peak_bytes * 2 < life.planned_bytes,
             qPrintable(QStringLiteral("%1 of %2").arg(life.peak_bytes).arg(life.planned_bytes)));
  }
};

QTEST_MAIN(TestLifetimes)
#include "test_lifetimes.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Training on the packed plan: the ready-made projects' models learn bit for
// bit as on the unpacked plan (losses, validation and final weights), on one
// and two CPU ranks, in FP32 and AMP, with SyncBatchNorm; and the CPU
// backend's step-schedule check catches a plan that gives two live tensors
// the same bytes, naming both.
#include <QtTest>
#include <cstring>
#include <string>

#include <renaissance/project_io.h>
#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "compile/lifetimes.h"
#include "compile/plan_report.h"
#include "data/dataset.h"
#include "runtime/checkpoint_state.h"
#include "runtime/trainer.h"
#include "runtime/training_session.h"
#include "setup/plan_fit.h"

using namespace tr;

namespace {

// A ready-made project's model and settings on synthetic 28x28 data: three
// training steps (two full, one last batch of 64) and one validation batch
// of 1000 per rank, the projects' own.
Project project(const char* name, int world, Precision precision, bool sync_bn = false) {
  Project p = load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
  p.dataset.kind = DatasetKind::Synthetic;
  p.dataset.train_size = 2 * p.training.global_batch + 64;
  p.dataset.val_size = 1000 * world;
  p.training.epochs = 1;
  p.training.precision = precision;
  p.training.sync_batch_norm = sync_bn;
  p.training.devices.kind = DeviceKind::CPU;
  p.training.devices.ids.clear();
  for (int r = 0; r < world; ++r) p.training.devices.ids.push_back(r);
  return p;
}

struct Run {
  std::vector<double> losses;
  std::vector<double> val;  // loss, top-1, top-5 of the epoch
  std::vector<float> weights;
  uint64_t arena = 0;
};

Run train_on(const Project& p, bool packed) {
  CompileOptions o;
  o.pack_memory = packed;
  // Validation at its written batch (larger than training's) on both sides:
  // what packing saves, not what micro-batches save.
  o.validation_micro_batch = CompileOptions::kAsWritten;
  const CompiledProject cp = compile_project(p, o);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  cpu::CpuBackendOptions b;
  b.world = cp.world_size;
  b.check_step_schedule = true;
  auto backend = cpu::make_cpu_backend(b);
  Run r;
  r.arena = cp.bytes_per_device();
  TrainCallbacks cb;
  cb.on_step = [&](const StepReport& s) { r.losses.push_back(s.loss); };
  cb.on_rank_step = [&](int rank, const StepReport&, TrainingSession& session) {
    if (rank != 0) return;
    r.weights.clear();
    for (DTensorId id : persistent_tensors(cp)) {
      const std::vector<float> v = session.read_tensor(0, id);
      r.weights.insert(r.weights.end(), v.begin(), v.end());
    }
  };
  const TrainReport report = train(cp, *backend, *data, {}, cb);
  const EpochReport& e = report.epochs.back();
  r.val = {e.val_loss, e.val_top1, e.val_top5};
  return r;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

class TestMemoryPacking : public QObject {
  Q_OBJECT

 private slots:
  void packedTrainsBitForBitAsUnpacked_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("world");
    QTest::addColumn<bool>("amp");
    QTest::addColumn<bool>("sync_bn");
    for (const char* n : {"lenet-fashion", "cnn-bn-fashion", "resnet8-fashion"})
      for (int world : {1, 2})
        for (bool amp : {false, true})
          QTest::addRow("%s %d rank%s %s", n, world, world > 1 ? "s" : "", amp ? "amp" : "fp32")
              << QString::fromLatin1(n) << world << amp << false;
    QTest::addRow("cnn-bn-fashion 2 ranks SyncBatchNorm")
        << QStringLiteral("cnn-bn-fashion") << 2 << false << true;
  }
  void packedTrainsBitForBitAsUnpacked() {
    QFETCH(QString, name);
    QFETCH(int, world);
    QFETCH(bool, amp);
    QFETCH(bool, sync_bn);
    const Project p = project(name.toLatin1().constData(), world,
                              amp ? Precision::AMP : Precision::FP32, sync_bn);
    const Run packed = train_on(p, true);
    const Run unpacked = train_on(p, false);
    QCOMPARE(packed.losses.size(), size_t{3});
    QVERIFY(same_bits(packed.losses, unpacked.losses));
    QVERIFY(same_bits(packed.val, unpacked.val));
    QVERIFY(!packed.weights.empty());
    QVERIFY(same_bits(packed.weights, unpacked.weights));
    QVERIFY2(packed.arena * 2 < unpacked.arena,
             qPrintable(QStringLiteral("%1 packed, %2 not").arg(packed.arena).arg(unpacked.arena)));
  }

  // A plan larger than the devices' memory is refused before anything is
  // allocated, with both numbers and the largest batch that fits.
  void aPlanThatDoesNotFitNamesTheLargestBatchThatDoes() {
    CompileOptions whole_validation;
    whole_validation.validation_micro_batch = CompileOptions::kAsWritten;
    const CompiledProject cp =
        compile_project(project("cnn-bn-fashion", 2, Precision::FP32), whole_validation);
    DeviceScan scan;
    scan.host_available_bytes = 2 * cp.bytes_per_device();
    QVERIFY(plan_fit_problem(cp, scan).empty());
    scan.host_available_bytes = cp.bytes_per_device();  // half a rank's need each
    const QString p = QString::fromStdString(plan_fit_problem(cp, scan));
    QVERIFY2(p.startsWith(QStringLiteral("the plan needs %1 per device, and cpu:2 has %2 per rank")
                              .arg(QString::fromStdString(human_bytes(cp.bytes_per_device())))
                              .arg(QString::fromStdString(human_bytes(cp.bytes_per_device() / 2)))),
             qPrintable(p));
    QVERIFY2(p.contains("shared by 2 ranks"), qPrintable(p));
    // The validation batch of 1000 per rank in one pass needs more than half
    // its bytes: no training batch can make up for it.
    QVERIFY2(p.contains("not even one sample per rank fits"), qPrintable(p));
    // In micro-batches, validation needs no more than training: the same
    // memory holds the whole plan.
    const CompiledProject fit = compile_project(project("cnn-bn-fashion", 2, Precision::FP32));
    QVERIFY(fit.bytes_per_device() * 2 <= cp.bytes_per_device());
    QVERIFY2(plan_fit_problem(fit, scan).empty(), plan_fit_problem(fit, scan).c_str());
    // Room for validation but not for this training batch: a batch is named.
    Project q = project("cnn-bn-fashion", 1, Precision::FP32);
    q.variants.back().batch = 100;
    q.training.global_batch = 512;
    q.dataset.train_size = 4096;
    const CompiledProject big = compile_project(q);
    scan.host_available_bytes = big.bytes_per_device() / 2;
    const std::string text = plan_fit_problem(big, scan);
    const size_t at = text.find("the largest global batch that fits is ");
    QVERIFY2(at != std::string::npos, text.c_str());
    const int64_t batch = std::stoll(text.substr(at + 38));
    QVERIFY2(batch > 0 && batch < 512, text.c_str());
    q.training.global_batch = batch;
    QVERIFY(compile_project(q).bytes_per_device() <= scan.host_available_bytes);
  }

  // Two tensors live at once given the same bytes: the CPU backend's check
  // of the step schedule stops training at the read that would see the
  // other tensor's bytes, and names both.
  void aWrongPlanIsCaughtWithBothTensorsNamed() {
    const Project p = project("lenet-fashion", 1, Precision::FP32);
    CompiledProject cp = compile_project(p);
    const int variant = cp.variant_index(VariantKind::Train);
    MemoryPlan& plan = cp.plans[static_cast<size_t>(variant)];
    const StepLifetimes life = step_lifetimes(cp, variant);
    // a: a feature the backward reads again; b: a tensor first written while
    // a is live and after a's first read.
    const TensorLifetime* a = nullptr;
    const TensorLifetime* b = nullptr;
    for (const TensorLifetime& x : life.tensors)
      for (const TensorLifetime& y : life.tensors) {
        if (a || x.first < 0 || y.first < 0 || x.id == y.id) continue;
        const DTensor& tx = plan.get_dtensor(x.id);
        const DTensor& ty = plan.get_dtensor(y.id);
        if (tx.region == Region::F_FEATURE_FP32 && x.first + 1 < y.first && y.first < x.last &&
            ty.slot_bytes <= tx.slot_bytes) {
          a = &x;
          b = &y;
        }
      }
    QVERIFY(a && b);
    PoolPlacement wrong = plan.pool_placement();
    wrong.offsets[static_cast<size_t>(b->id)] = wrong.offsets[static_cast<size_t>(a->id)];
    plan.replace_pool(wrong);
    const std::string a_name = plan.get_dtensor(a->id).name, b_name = plan.get_dtensor(b->id).name;

    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    auto backend = cpu::make_cpu_backend({});
    TrainOptions o;
    o.max_steps = 1;
    o.validate = false;
    QString message;
    try {
      tr::train(cp, *backend, *data, o);
    } catch (const std::logic_error& e) {
      message = QString::fromStdString(e.what());
    }
    qInfo("%s", qPrintable(message));
    QVERIFY2(message.contains(QString::fromStdString("reads '" + a_name + "'")),
             qPrintable(message));
    QVERIFY2(message.contains(QString::fromStdString("last written as '" + b_name + "'")),
             qPrintable(message));
    QVERIFY2(message.contains("the plan gives both the same bytes while both are live"),
             qPrintable(message));

    // The same plan, placed correctly again, trains.
    CompiledProject good = compile_project(p);
    auto backend2 = cpu::make_cpu_backend({});
    QCOMPARE(tr::train(good, *backend2, *data, o).steps, int64_t{1});
  }
};

QTEST_APPLESS_MAIN(TestMemoryPacking)
#include "test_memory_packing.moc"

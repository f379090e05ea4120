// SPDX-License-Identifier: GPL-3.0-or-later
// Training parity between the CPU and CUDA backends: the same project, seed
// and synthetic data trained for 50 steps on the CPU and on CUDA (captured
// graphs on five streams), the per-step losses compared. This is the whole
// path above the Backend interface run twice, so any kernel, capture or
// stream-ordering fault on CUDA shows as a loss that drifts away.
//
// Tolerances (stated, and each run's largest difference is printed):
//  - FP32, strict (no TF32, so only summation order differs): step 0 within
//    1e-4 relative (no update has happened yet); every step within 1e-2
//    relative, which allows the order differences to grow through 50 updates;
//  - AMP (FP16 features on both sides, rounded at the same points): step 0
//    within 5e-3, every step within 5e-2.
// The measuring modes (one stream, uncaptured) must train bit-identically.
// Skips without a device; the multi-device case needs two.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <renaissance/project_io.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/linear_launchers.h"
#include "compile/compiler.h"
#include "cuda_test_util.h"
#include "data/dataset.h"
#include "runtime/trainer.h"

using namespace tr;

namespace {

constexpr int64_t kSteps = 50;

struct Tolerance {
  double first, every;
};
constexpr Tolerance kFp32{1e-4, 1e-2};
constexpr Tolerance kAmp{5e-3, 5e-2};
// bfloat16 keeps 8 significant bits to FP16's 11.
constexpr Tolerance kBf16{4e-2, 1e-1};

// A shipped project on learnable synthetic data of the project's own image
// shape (the device machine has no dataset package), fixed seed, no validation.
Project parity_project(const char* file, Precision precision, int world, bool sync_bn = false) {
  // The device check runs these programs away from the source tree.
  const QString dir = qEnvironmentVariable("TR_PROJECTS_DIR", QStringLiteral(TR_PROJECTS_DIR));
  Project p = load_project(dir.toStdString() + "/" + file);
  p.dataset.kind = DatasetKind::Synthetic;
  p.dataset.train_size = p.training.global_batch * kSteps;
  p.dataset.val_size = p.training.global_batch;
  p.training.seed = 1234;
  p.training.precision = precision;
  p.training.sync_batch_norm = sync_bn;
  p.training.devices.ids.clear();
  for (int i = 0; i < world; ++i) p.training.devices.ids.push_back(i);
  return p;
}

// CUDA backend options beyond the devices: the measuring modes.
struct Modes {
  int streams = 5;
  bool capture = true;
};

std::vector<double> losses_on(Project p, DeviceKind kind, Modes modes = {}) {
  p.training.devices.kind = kind;
  const CompiledProject cp = compile_project(p);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  std::unique_ptr<Backend> backend;
  if (kind == DeviceKind::CUDA) {
    cuda::CudaBackendOptions o;
    o.devices = cp.project.training.devices.ids;
    o.sync_batch_norm = cp.project.training.sync_batch_norm;
    o.streams = modes.streams;
    o.capture = modes.capture;
    backend = cuda::make_cuda_backend(o);
  } else {
    backend = cpu::make_cpu_backend({cp.world_size, false});
  }
  TrainOptions options;
  options.max_steps = kSteps;
  options.validate = false;
  std::vector<double> losses;
  TrainCallbacks cb;
  cb.on_step = [&](const StepReport& s) { losses.push_back(s.loss); };
  (void)train(cp, *backend, *data, options, cb);
  return losses;
}

double rel(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(b), 1e-6);
}

// Empty when the CUDA losses follow the CPU's within `t`; prints the figures.
QString compare(const char* what, const std::vector<double>& cpu, const std::vector<double>& gpu,
                Tolerance t) {
  if (cpu.size() != static_cast<size_t>(kSteps) || gpu.size() != cpu.size())
    return QString("%1: %2 CPU and %3 CUDA steps, %4 expected")
        .arg(what)
        .arg(cpu.size())
        .arg(gpu.size())
        .arg(kSteps);
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!std::isfinite(gpu[i]))
      return QString("%1: CUDA loss at step %2 is %3").arg(what).arg(i).arg(gpu[i]);
    if (rel(gpu[i], cpu[i]) > worst) {
      worst = rel(gpu[i], cpu[i]);
      worst_at = i;
    }
  }
  qInfo(
      "%s: loss step 0 CPU %.6f CUDA %.6f; step %lld CPU %.6f CUDA %.6f; largest relative "
      "difference %.3g at step %zu",
      what, cpu.front(), gpu.front(), static_cast<long long>(kSteps - 1), cpu.back(), gpu.back(),
      worst, worst_at);
  if (rel(gpu.front(), cpu.front()) > t.first)
    return QString("%1: step 0 loss %2 on CUDA, %3 on the CPU (tolerance %4)")
        .arg(what)
        .arg(gpu.front(), 0, 'g', 9)
        .arg(cpu.front(), 0, 'g', 9)
        .arg(t.first);
  if (worst > t.every)
    return QString("%1: step %2 loss %3 on CUDA, %4 on the CPU (tolerance %5)")
        .arg(what)
        .arg(worst_at)
        .arg(gpu[worst_at], 0, 'g', 9)
        .arg(cpu[worst_at], 0, 'g', 9)
        .arg(t.every);
  // Training happened: the loss moved.
  if (std::fabs(cpu.back() - cpu.front()) < 1e-3)
    return QString("%1: the loss did not move in %2 steps").arg(what).arg(kSteps);
  return {};
}

struct StrictFp32 {
  StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::STRICT); }
  ~StrictFp32() { cuda::set_fp32_gemm(cuda::Fp32Gemm::TF32); }
};

}  // namespace

class TestCudaTraining : public QObject {
  Q_OBJECT

 private slots:
  void parity_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<int>("precision");
    for (Precision pr : {Precision::FP32, Precision::AMP, Precision::BF16})
      for (const char* m : {"lenet", "resnet8"})
        QTest::newRow((std::string(m) + " " + std::string(precision_name(pr))).c_str())
            << QString("%1-fashion.json").arg(m) << static_cast<int>(pr);
  }

  void parity() {
    TR_REQUIRE_CUDA_DEVICE();
    QFETCH(QString, project);
    QFETCH(int, precision);
    const auto pr = static_cast<Precision>(precision);
    StrictFp32 strict;
    const Project p = parity_project(project.toUtf8().constData(), pr, 1);
    const std::vector<double> cpu = losses_on(p, DeviceKind::CPU);
    const std::vector<double> gpu = losses_on(p, DeviceKind::CUDA);
    const QByteArray what = project.toUtf8() + " " + precision_name(pr).data();
    const QString e = compare(what.constData(), cpu, gpu,
                              pr == Precision::AMP    ? kAmp
                              : pr == Precision::BF16 ? kBf16
                                                      : kFp32);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }

  // One stream, or launches replayed one by one instead of captured graphs,
  // change when work runs, not what it computes: every kernel's reductions
  // have a fixed order, so the losses are the same bits.
  void measuringModesTrainIdentically() {
    TR_REQUIRE_CUDA_DEVICE();
    const Project p = parity_project("resnet8-fashion.json", Precision::AMP, 1);
    const std::vector<double> captured = losses_on(p, DeviceKind::CUDA);
    QCOMPARE(captured.size(), static_cast<size_t>(kSteps));
    QCOMPARE(losses_on(p, DeviceKind::CUDA, {1, true}), captured);
    QCOMPARE(losses_on(p, DeviceKind::CUDA, {5, false}), captured);
  }

  // Two ranks on two devices (NCCL all-reduce of the gradient buckets; with
  // SyncBatchNorm, the BN layers' sums on a communicator of their own)
  // against two CPU ranks (in-process collectives).
  void parityTwoDevices_data() {
    QTest::addColumn<bool>("sync_bn");
    QTest::newRow("per-rank bn") << false;
    QTest::newRow("sync bn") << true;
  }

  void parityTwoDevices() {
    TR_REQUIRE_CUDA_DEVICE();
    if (test::cuda_device_count() < 2) QSKIP("needs two CUDA devices");
    QFETCH(bool, sync_bn);
    StrictFp32 strict;
    const Project p = parity_project("resnet8-fashion.json", Precision::FP32, 2, sync_bn);
    const QString e = compare(sync_bn ? "resnet8 fp32, 2 ranks, sync bn" : "resnet8 fp32, 2 ranks",
                              losses_on(p, DeviceKind::CPU), losses_on(p, DeviceKind::CUDA), kFp32);
    QVERIFY2(e.isEmpty(), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestCudaTraining)
#include "test_cuda_training.moc"

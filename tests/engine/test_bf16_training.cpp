// SPDX-License-Identifier: GPL-3.0-or-later
// BF16 precision on the CPU backend, end to end: a BF16 project learns with
// no loss scale; after every step the bfloat16 weight copy (A) is the master
// weights rounded once; a NaN stops training with an error instead of
// skipping the step (BF16 has FP32's range, so no scale could have saved
// it); one and two threads give the same losses bit for bit; the input
// batches are the FP32 ones rounded to bfloat16; the setup refuses a CPU
// without BF16 instructions, naming them.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <vector>

#include <renaissance/devices.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "compile/compiler.h"
#include "core/bf16_convert.h"
#include "core/cpu_features.h"
#include "data/batch_pipeline.h"
#include "data/dataset.h"
#include "runtime/trainer.h"
#include "sixteen_bit_training.h"

using namespace tr;

namespace {

using test::copied_series;
using test::series;
using test::train_with;
using test::Trained;

Project bf16_project() {
  return test::residual_bn_project(Precision::BF16);
}

// Whether every A tensor holds its W tensor rounded to bfloat16, bit for bit.
bool a_is_w_in_bf16(Backend& b, const CompiledProject& cp) {
  const ByteRange w = copied_series(cp, ParamSeries::W), a = series(cp, ParamSeries::A);
  const auto* wf = reinterpret_cast<const float*>(b.arena(0) + w.offset);
  const auto* ah = reinterpret_cast<const uint16_t*>(b.arena(0) + a.offset);
  for (uint64_t i = 0; i < a.bytes / 2; ++i)
    if (ah[i] != float_to_bf16_bits(wf[i])) return false;
  return true;
}

void nothing(int64_t, Backend&, const CompiledProject&) {}

}  // namespace

// The setup refuses BF16 training without the instructions (the last test).
#define REQUIRE_BF16_CPU()      \
  if (!detect_cpu_bf16().any()) \
  QSKIP("this CPU has no BF16 instructions: BF16 training is refused here")

class TestBf16Training : public QObject {
  Q_OBJECT

 private slots:
  void cleanupTestCase() { cpu::set_cpu_threads(2); }

  void bf16Learns() {
    REQUIRE_BF16_CPU();
    int64_t checked = 0;
    const Trained t =
        train_with(bf16_project(), {}, [&](int64_t, Backend& b, const CompiledProject& cp) {
          // The cast ran after this step's update.
          QVERIFY(a_is_w_in_bf16(b, cp));
          ++checked;
        });
    QCOMPARE(t.report.epochs.size(), size_t{3});
    QVERIFY(checked > 0);
    const EpochReport& first = t.report.epochs.front();
    const EpochReport& last = t.report.epochs.back();
    QVERIFY2(last.train_loss < first.train_loss, qPrintable(QString::number(last.train_loss)));
    QVERIFY2(last.val_top1 > 0.6, qPrintable(QString::number(last.val_top1)));
    for (double l : t.losses) QVERIFY(std::isfinite(l));
    // No loss scale: nothing to report.
    for (double s : t.loss_scales) QCOMPARE(s, 0.0);
  }

  // The same project in FP32 and in BF16 from the same seed: the first
  // losses agree to bfloat16's precision (the same model, rounded), yet are
  // not the same bits (the BF16 path really ran).
  void firstLossMatchesFp32ToBf16Precision() {
    REQUIRE_BF16_CPU();
    TrainOptions o;
    o.max_steps = 1;
    o.validate = false;
    Project p = bf16_project();
    const double bf16 = train_with(p, o, nothing).losses.at(0);
    p.training.precision = Precision::FP32;
    const double fp32 = train_with(p, o, nothing).losses.at(0);
    QVERIFY2(std::abs(bf16 - fp32) < 0.02 * fp32,
             qPrintable(QStringLiteral("%1 vs %2").arg(bf16).arg(fp32)));
    QVERIFY(bf16 != fp32);
  }

  void nanStopsTrainingInsteadOfSkipping() {
    REQUIRE_BF16_CPU();
    TrainOptions o;
    o.max_steps = 10;
    o.validate = false;
    QString error;
    int64_t last = -1;
    try {
      train_with(bf16_project(), o, [&](int64_t step, Backend& b, const CompiledProject& cp) {
        last = step;
        if (step != 1) return;
        // A weight of the copy the next step computes with becomes NaN.
        auto* a = reinterpret_cast<uint16_t*>(b.arena(0) + series(cp, ParamSeries::A).offset);
        a[0] = 0x7FC0;
      });
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    QVERIFY2(error.contains("became NaN or infinite at step"), qPrintable(error));
    QCOMPARE(last, int64_t{1});
  }

  void oneAndTwoThreadsGiveTheSameLosses() {
    REQUIRE_BF16_CPU();
    TrainOptions o;
    o.max_steps = 6;
    o.validate = false;
    cpu::set_cpu_threads(1);
    const std::vector<double> one = train_with(bf16_project(), o, nothing).losses;
    cpu::set_cpu_threads(2);
    const std::vector<double> two = train_with(bf16_project(), o, nothing).losses;
    QCOMPARE(one.size(), size_t{6});
    QCOMPARE(one, two);
  }

  void inputBatchesAreFp32RoundedToBf16() {
    const Project p = bf16_project();
    auto data = load_dataset(p.dataset, "", p.training.seed);
    auto batch_of = [&](DType dtype) {
      BatchSpec spec = make_batch_spec(p.dataset, Split::Train, 64, p.training.seed, dtype);
      BatchPipeline pipe(*data, Split::Train, spec, 1, 0);
      const Batch* b = pipe.next();
      return b->images.clone();
    };
    Tensor f32 = batch_of(DType::FP32), bf16 = batch_of(DType::BF16);
    QCOMPARE(bf16.dtype(), DType::BF16);
    QCOMPARE(bf16.elements(), f32.elements());
    const float* x = f32.data<float>();
    const uint16_t* h = bf16.data<uint16_t>();
    for (int64_t i = 0; i < f32.elements(); ++i)
      QVERIFY2(h[i] == float_to_bf16_bits(x[i]), qPrintable(QString::number(i)));
  }

  void aCpuWithoutBf16IsRefusedByName() {
    const std::string why = cpu_precision_problem(Precision::BF16, CpuBf16{});
    QVERIFY2(why.find("AVX-512 BF16 or AMX") != std::string::npos, why.c_str());
    QVERIFY2(why.find("fp32 or amp") != std::string::npos, why.c_str());
    QVERIFY(cpu_precision_problem(Precision::BF16, CpuBf16{true, false}).empty());
    QVERIFY(cpu_precision_problem(Precision::BF16, CpuBf16{false, true}).empty());
    QVERIFY(cpu_precision_problem(Precision::FP32, CpuBf16{}).empty());
    QVERIFY(cpu_precision_problem(Precision::AMP, CpuBf16{}).empty());
  }
};

QTEST_APPLESS_MAIN(TestBf16Training)
#include "test_bf16_training.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Validation in micro-batches (CompileOptions::validation_micro_batch):
// lenet-fashion's validation batch of 1000 runs as the micro-batches that
// fit in what training needs; `plan` says so, the plan shrinks to
// training's bytes, training is the same bit for bit, and validation's
// top-1, top-5 and confusion matrix are exactly those of passes of 1000,
// its loss the same but for the order of the sums (within 1e-6).
#include <QtTest>

#include <cmath>

#include <nlohmann/json.hpp>

#include <renaissance/run_store.h>
#include "cli_process.h"

using nlohmann::json;

namespace {

tr::test::ProcessRun cli(const QStringList& args) {
  return tr::test::run_process(QStringLiteral(TR_CLI), args);
}

const QString kLenet = QStringLiteral(TR_PROJECTS_DIR "/lenet-fashion.json");

uint64_t plan_bytes(const QString& project, const QString& micro) {
  const tr::test::ProcessRun r =
      cli({"plan", project, "--json", "--validation-micro-batch", micro});
  return json::parse(r.out.toStdString(), nullptr, false).value("bytes_per_device", uint64_t{0});
}

}  // namespace

class TestValidationMicroBatch : public QObject {
  Q_OBJECT

 private slots:
  void planRunsValidationInTrainingsBytes() {
    const QString p = kLenet;
    const tr::test::ProcessRun r = cli({"plan", p});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains("variant val (validation, batch 125 per device, micro-batches of the "
                            "validation batch 1000)"),
             qPrintable(r.out));
    const uint64_t fit = plan_bytes(p, "fit"), whole = plan_bytes(p, "as-written");
    QVERIFY(fit > 0);
    QVERIFY2(fit * 3 < whole, qPrintable(QStringLiteral("%1 against %2").arg(fit).arg(whole)));
    // A micro-batch the user names, at most the written batch.
    QVERIFY(plan_bytes(p, "250") > fit);
    QVERIFY(plan_bytes(p, "5000") == whole);
    // One whose batches do not cover the 10,000 samples: refused, naming one that does.
    const tr::test::ProcessRun uneven = cli({"plan", p, "--validation-micro-batch", "300"});
    QCOMPARE(uneven.code, 1);  // a project problem, as the CLI reports them
    QVERIFY2(uneven.out.contains("validation micro-batches of 300 x 1 rank do not cover the 10000 "
                                 "validation samples; --validation-micro-batch 250 does"),
             qPrintable(uneven.out));
    const tr::test::ProcessRun bad = cli({"plan", p, "--validation-micro-batch", "some"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.out.contains("option '--validation-micro-batch' takes a positive integer"),
             qPrintable(bad.out));
  }

  void microBatchesValidateAsOnePass() {
    QTemporaryDir dir;
    const QString store = dir.filePath("runs.sqlite");
    // 30 steps, then a validation of the 10,000 images: 10 passes of 1000,
    // or 80 of 125.
    for (const char* micro : {"as-written", "fit"}) {
      const tr::test::ProcessRun r = cli({"train", kLenet, "--max-steps", "30", "--store", store,
                                          "--validation-micro-batch", micro});
      QVERIFY2(r.code == 0, qPrintable(r.out));
    }
    const tr::store::RunStore s(store.toStdString());
    const auto whole = s.epochs(1), micro = s.epochs(2);
    QCOMPARE(micro.size(), size_t{1});
    QCOMPARE(whole.size(), micro.size());
    const auto steps_whole = s.step_curve(1), steps_micro = s.step_curve(2);
    QCOMPARE(steps_whole.size(), steps_micro.size());
    for (size_t i = 0; i < steps_whole.size(); ++i)
      QCOMPARE(steps_micro[i].loss, steps_whole[i].loss);
    for (size_t e = 0; e < whole.size(); ++e) {
      QCOMPARE(micro[e].train_loss, whole[e].train_loss);
      QCOMPARE(*micro[e].val_top1, *whole[e].val_top1);
      QCOMPARE(*micro[e].val_top5, *whole[e].val_top5);
      QVERIFY(!whole[e].confusion.empty());
      QVERIFY(micro[e].confusion == whole[e].confusion);
      QVERIFY2(std::abs(*micro[e].val_loss - *whole[e].val_loss) <= 1e-6 * *whole[e].val_loss,
               qPrintable(QStringLiteral("%1 in micro-batches, %2 in one pass")
                              .arg(*micro[e].val_loss, 0, 'g', 17)
                              .arg(*whole[e].val_loss, 0, 'g', 17)));
    }
  }
};

QTEST_GUILESS_MAIN(TestValidationMicroBatch)
#include "test_validation_micro_batch.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// The Data view on a real document: it loads the dataset on its own thread
// when shown, lists the images per class, shows the first training images
// of the chosen epoch, reloads when the dataset's settings change, and makes
// the measured mean and std the project's normalisation in one undo step.
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QUndoStack>
#include <QtTest>

#include <renaissance/dataset_probe.h>
#include <renaissance/project_io.h>
#include "dataset/dataset_view.h"
#include "dataset/sample_grid.h"
#include "project_document.h"
#include "settings/set_training_command.h"

using namespace tr;
using namespace tr::gui;

namespace {

Project synthetic() {
  Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
  p.dataset.kind = DatasetKind::Synthetic;
  p.dataset.height = 8;
  p.dataset.width = 8;
  p.dataset.channels = 3;
  p.dataset.classes = 5;
  p.dataset.train_size = 500;
  p.dataset.val_size = 50;
  p.dataset.mean = {0.5};
  p.dataset.std = {0.25};
  p.dataset.random_flip = true;
  return p;
}

struct View {
  ProjectDocument doc;
  DatasetView view{&doc};
  explicit View(const Project& p) {
    doc.reset(p, QString());
    view.resize(1000, 700);
    view.show();
  }
};

}  // namespace

class TestDataView : public QObject {
  Q_OBJECT

 private slots:
  void showsTheDataAndMakesItsStatisticsTheNormalisation() {
    View v(synthetic());
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QVERIFY2(v.view.error().isEmpty(), qPrintable(v.view.error()));
    QCOMPARE(v.view.counts()->rowCount(), 5);
    int64_t train = 0;
    for (int r = 0; r < 5; ++r) train += v.view.counts()->item(r, 1)->text().toLongLong();
    QCOMPARE(train, int64_t{500});
    QCOMPARE(v.view.counts()->item(2, 0)->text(), QStringLiteral("class 2"));
    QCOMPARE(v.view.grid()->cellCount(), DatasetView::kSamples);
    QCOMPARE(v.view.grid()->cell(0).image.size(), QSize(8, 8));
    const QImage first = v.view.grid()->cell(0).image;

    // Another epoch, other images; the same epoch again, the same ones.
    v.view.epoch()->setValue(2);
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QVERIFY(v.view.grid()->cell(0).image != first);
    v.view.epoch()->setValue(1);
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QCOMPARE(v.view.grid()->cell(0).image, first);

    // The measured figures become the project's, one undo step.
    const std::vector<double> mean = v.view.preview().mean;
    QCOMPARE(mean.size(), size_t{3});
    QVERIFY(v.view.useStatistics()->isEnabled());
    QVERIFY2(v.view.statistics()->text().contains(QStringLiteral("mean 0.5, std 0.25")),
             qPrintable(v.view.statistics()->text()));
    v.view.useStatistics()->click();
    const DatasetSpec& d = v.doc.project().dataset;
    QCOMPARE(d.mean.size(), size_t{3});
    for (size_t c = 0; c < 3; ++c) {
      QVERIFY(std::abs(d.mean[c] - mean[c]) < 1e-6);
      QVERIFY(std::abs(d.std[c] - v.view.preview().std[c]) < 1e-6);
    }
    QVERIFY(!v.view.useStatistics()->isEnabled());  // nothing left to apply
    QVERIFY(v.view.statistics()->text().contains(QStringLiteral(": the same")));
    QCOMPARE(v.doc.undoStack()->count(), 1);
    v.doc.undoStack()->undo();
    QCOMPARE(v.doc.project().dataset.mean, std::vector<double>{0.5});
    QVERIFY(v.view.useStatistics()->isEnabled());
    QVERIFY(v.view.isCurrent());  // the normalisation does not change the images
  }

  // A change of the dataset reloads; one that does not load says why.
  void reloadsAndSaysWhyDataDoesNotLoad() {
    View v(synthetic());
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    ProjectSettings s = v.doc.settings();
    s.dataset.classes = 3;
    v.doc.undoStack()->push(new SetTrainingCommand(
        &v.doc, v.doc.settings(), s, QStringLiteral("dataset.classes"), QStringLiteral("classes")));
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QCOMPARE(v.view.counts()->rowCount(), 3);
    Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    p.dataset.path = "/nonexistent/fashion";
    v.doc.reset(p, QString());
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QVERIFY2(v.view.error().contains(QStringLiteral("/nonexistent/fashion")),
             qPrintable(v.view.error()));
    QCOMPARE(v.view.grid()->cellCount(), 0);
    QVERIFY(!v.view.useStatistics()->isEnabled());
  }

  // Fashion-MNIST's figures are the ones the project already has.
  void fashionMnistIsNormalisedWithItsOwnFigures() {
    const Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    if (!probe_dataset(p.dataset).ok) QSKIP("Fashion-MNIST is not installed");
    View v(p);
    QTRY_VERIFY_WITH_TIMEOUT(v.view.isCurrent(), 20000);
    QCOMPARE(v.view.counts()->item(9, 0)->text(), QStringLiteral("Ankle boot"));
    QCOMPARE(v.view.counts()->item(9, 1)->text(), QStringLiteral("6000"));
    QVERIFY2(!v.view.useStatistics()->isEnabled(), qPrintable(v.view.statistics()->text()));
    QCOMPARE(v.view.grid()->cell(0).image.format(), QImage::Format_Grayscale8);
    // The counts arrive after the view is laid out: the table still shows
    // its three columns whole, without scrolling sideways.
    QTableWidget* counts = v.view.counts();
    QTRY_COMPARE(counts->horizontalScrollBar()->maximum(), 0);
    const QHeaderView* h = counts->horizontalHeader();
    QVERIFY2(h->sectionViewportPosition(2) + h->sectionSize(2) <= counts->viewport()->width(),
             qPrintable(QStringLiteral("Validation ends at %1 of %2 px")
                            .arg(h->sectionViewportPosition(2) + h->sectionSize(2))
                            .arg(counts->viewport()->width())));
  }
};

QTEST_MAIN(TestDataView)
#include "test_data_view.moc"

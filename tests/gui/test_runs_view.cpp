// SPDX-License-Identifier: GPL-3.0-or-later
// The runs view on a real run store: runs written with known curves (one
// 300,000 steps long) and one recorded by the real trainer are listed with
// their values, sort numerically, filter by tag, name and note; tags and
// notes reach the store; two runs overlay at full resolution while the plot
// draws a few points per pixel column; x axes with whole-number ticks, the
// legend under the plot, configuration differences grouped with the runs'
// values side by side (two different models: layer by layer, compact,
// filterable, no horizontal scrolling), CSV export, deletion (a live run
// refused), a file that is not a store, and a run recorded elsewhere
// showing up while the view is open.
#include <QComboBox>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/run_compare.h>
#include <renaissance/run_export.h>
#include <renaissance/run_store.h>
#include <renaissance/training.h>
#include <renaissance/training_job.h>
#include <renaissance/training_recorder.h>
#include "plot/curve_plot.h"
#include "runs/config_diff_model.h"
#include "runs/config_diff_view.h"
#include "runs/run_overlay.h"
#include "runs/runs_table_model.h"
#include "runs/runs_view.h"

using namespace tr;
using namespace tr::gui;
using store::RunStore;

namespace {

// Far more points than pixel columns, and still quick to write and read.
constexpr int64_t kLongSteps = 300'000;

store::RunStart start_of(const std::string& name, double lr, int batch) {
  store::RunStart s;
  s.name = name;
  const nlohmann::json training = {{"optimizer", {{"type", "sgd"}, {"lr", lr}}},
                                   {"epochs", 2},
                                   {"global_batch", batch},
                                   {"devices", "cpu:1"}};
  s.hyper_json = training.dump();
  s.project_json = nlohmann::json{{"name", name}, {"training", training}}.dump();
  s.devices = "cpu:1";
  s.precision = "fp32";
  s.seed = 7;
  return s;
}

// `steps` steps of `per_epoch` each, every one taking `step_seconds` (the
// throughput says so); one epoch record per whole epoch, ending 100 s apart.
int64_t write_run(RunStore& s, const store::RunStart& start, int64_t steps, int64_t per_epoch,
                  double step_seconds, const std::vector<double>& val_top1,
                  store::RunStatus status = store::RunStatus::Finished,
                  const std::string& error = {}) {
  const int64_t id = s.begin_run(start);
  const double started = s.run(id).summary.started_at;
  const double batch = nlohmann::json::parse(start.hyper_json).at("global_batch").get<double>();
  std::vector<store::StepRecord> curve(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    store::StepRecord& r = curve[static_cast<size_t>(i)];
    r.step = i;
    r.epoch = i / per_epoch;
    r.loss = 2.0 / (1.0 + static_cast<double>(i) * 1e-3);
    r.top1 = 0.5;
    r.lr = 0.1;
    r.images_per_s = batch / step_seconds;
  }
  std::vector<store::EpochRecord> epochs;
  for (size_t e = 0; e < val_top1.size(); ++e) {
    store::EpochRecord r;
    r.epoch = static_cast<int64_t>(e);
    r.train_loss = 1.0 - 0.25 * static_cast<double>(e + 1);
    r.train_top1 = 0.6;
    r.val_loss = 0.7;
    r.val_top1 = val_top1[e];
    r.val_top5 = 0.99;
    r.images_per_s = batch / step_seconds;
    r.seconds = static_cast<double>(per_epoch) * step_seconds;
    r.ended_at = started + 100.0 * static_cast<double>(e + 1);
    epochs.push_back(r);
  }
  s.append(id, curve, epochs);
  s.end_run(id, status, error);
  return id;
}

// A project file's run configured as the trainer records one: the project
// as trained, and its training settings with what the run adds.
store::RunStart start_of_project(const std::string& file) {
  const Project p = load_project(std::string(TR_PROJECTS_DIR) + "/" + file);
  store::RunStart s;
  s.name = p.name;
  s.project_json = project_to_json(p);
  nlohmann::json hyper = nlohmann::json::parse(s.project_json).at("training");
  hyper["validation"] = true;
  hyper["dataset"] = "Fashion-MNIST (60000 train, 10000 val, 28x28)";
  s.hyper_json = hyper.dump();
  s.devices = "cpu:1";
  s.precision = "fp32";
  s.seed = 42;
  return s;
}

// The layer ids of a project file's model.
std::set<std::string> layer_ids(const std::string& file) {
  std::set<std::string> ids;
  for (const auto& n : load_project(std::string(TR_PROJECTS_DIR) + "/" + file).model.nodes)
    ids.insert(n.id);
  return ids;
}

// The rows a tree view shows (groups and the settings of open groups).
int shown_rows(const QTreeView& tree) {
  int n = 0;
  for (QModelIndex i = tree.model()->index(0, 0); i.isValid(); i = tree.indexBelow(i)) ++n;
  return n;
}

// A run of tiny-synthetic recorded by the real trainer (two epochs, validated).
int64_t train_tiny(const std::string& store_path) {
  TrainingJob job(load_project(TR_TEST_DATA "/projects/tiny-synthetic.json"));
  TrainOptions options;
  store::TrainingRecorder recorder(store_path, job.plan(), job.context(), options);
  TrainCallbacks cb;
  recorder.attach(cb);
  const TrainReport report = job.train(options, cb);
  const std::string problem = recorder.ended(report);
  if (!problem.empty()) throw std::runtime_error(problem);
  return recorder.run_id();
}

QByteArray read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString cell(const RunsView& view, int64_t run, int column) {
  const RunsTableModel* m = view.runsModel();
  const int row = m->rowOf(run);
  return row < 0 ? QString() : m->index(row, column).data().toString();
}

// The overlay series of a run (its label starts "Run <id> ").
int series_of(const RunOverlay& overlay, int64_t run) {
  for (size_t i = 0; i < overlay.runs().size(); ++i)
    if (overlay.runs()[i].curves->id == run) return static_cast<int>(i);
  return -1;
}

}  // namespace

class TestRunsView : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path_;
  int64_t alpha_ = 0, beta_ = 0, tiny_ = 0, gamma_ = 0;

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    path_ = dir_.filePath(QStringLiteral("runs.sqlite"));
    const std::string path = path_.toStdString();
    RunStore s(path);
    alpha_ = write_run(s, start_of("alpha", 0.1, 64), 20, 10, 0.5, {0.80, 0.85});
    s.add_checkpoint(alpha_, {0, "/tmp/alpha-epoch2.ckpt", 2, std::nullopt, "", 0});
    beta_ = write_run(s, start_of("beta", 0.01, 64), kLongSteps, kLongSteps, 0.001, {0.90});
    tiny_ = train_tiny(path);
    gamma_ = write_run(s, start_of("gamma", 0.1, 64), 5, 10, 0.5, {}, store::RunStatus::Failed,
                       "the loss became NaN at step 4");
  }

  void defaultStoreIsTheResolvedOne() {
    const QByteArray before = qgetenv("RENAISSANCE_STORE");
    const QString path = dir_.filePath(QStringLiteral("default.sqlite"));
    qputenv("RENAISSANCE_STORE", path.toUtf8());
    {
      const RunsView view;
      QCOMPARE(view.storePath(), path);
      // Nothing is opened (or created) before the view is shown or refreshed.
      QVERIFY(!QFile::exists(path));
    }
    qputenv("RENAISSANCE_STORE", before);
  }

  void listsRunsWithTheirValues() {
    RunsView view;
    view.setStorePath(path_);
    QVERIFY2(view.errorText().isEmpty(), qPrintable(view.errorText()));
    QCOMPARE(view.runsModel()->rowCount(), 4);
    QCOMPARE(cell(view, alpha_, RunsTableModel::Name), QStringLiteral("alpha"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::Status), QStringLiteral("finished"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::Devices), QStringLiteral("cpu:1"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::Precision), QStringLiteral("fp32"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::Steps), QStringLiteral("20"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::Epochs), QStringLiteral("2"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::ValTop1), QStringLiteral("85.00%"));
    QCOMPARE(cell(view, alpha_, RunsTableModel::TrainLoss), QStringLiteral("0.5000"));
    QCOMPARE(cell(view, beta_, RunsTableModel::Steps), QString::number(kLongSteps));
    QCOMPARE(cell(view, gamma_, RunsTableModel::Status), QStringLiteral("failed"));
    QCOMPARE(cell(view, gamma_, RunsTableModel::ValTop1), QStringLiteral("-"));

    // The trainer's run, as the store has it.
    const RunStore s(path_.toStdString());
    const store::RunSummary t = s.run(tiny_).summary;
    QCOMPARE(cell(view, tiny_, RunsTableModel::Name), QStringLiteral("tiny-synthetic"));
    QCOMPARE(cell(view, tiny_, RunsTableModel::Steps), QString::number(t.steps));
    QCOMPARE(cell(view, tiny_, RunsTableModel::Epochs), QStringLiteral("2"));
    QCOMPARE(cell(view, tiny_, RunsTableModel::ValTop1),
             QString::number(100 * t.final_val_top1.value(), 'f', 2) + QLatin1Char('%'));

    // One run selected: its details, with the error of a failed run.
    view.selectRuns({gamma_});
    QCOMPARE(view.selectedRuns(), QList<qint64>{gamma_});
    QVERIFY(view.detailsText().contains(QStringLiteral("the loss became NaN at step 4")));
    view.selectRuns({alpha_});
    QVERIFY(view.detailsText().contains(QStringLiteral("/tmp/alpha-epoch2.ckpt")));
    QVERIFY(view.detailsText().contains(QStringLiteral("optimizer/lr")));
    view.selectRuns({tiny_});
    QVERIFY(view.detailsText().contains(QStringLiteral("Per-class accuracy")));
  }

  void numericColumnsSortNumerically() {
    RunsView view;
    view.setStorePath(path_);
    QSortFilterProxyModel* p = view.sortedRuns();
    const auto column = [&](int c) {
      QStringList out;
      for (int r = 0; r < p->rowCount(); ++r) out << p->index(r, c).data().toString();
      return out;
    };
    p->sort(RunsTableModel::Steps, Qt::AscendingOrder);
    // As text, "300000" would come before "5".
    QCOMPARE(column(RunsTableModel::Steps),
             (QStringList{"5", "20", "20", QString::number(kLongSteps)}));
    // Percentages: "9.50%" would sort above "85.00%" as text.
    p->sort(RunsTableModel::ValTop1, Qt::DescendingOrder);
    std::vector<double> top1;
    for (int r = 0; r < p->rowCount(); ++r)
      top1.push_back(
          p->index(r, RunsTableModel::ValTop1).data(RunsTableModel::SortRole).toDouble());
    QVERIFY(std::is_sorted(top1.rbegin(), top1.rend()));
    double best = 0;
    for (const auto& r : RunStore(path_.toStdString()).list_runs())
      best = std::max(best, r.final_val_top1.value_or(0));
    QCOMPARE(column(RunsTableModel::ValTop1).front(),
             QString::number(100 * best, 'f', 2) + QLatin1Char('%'));
    QCOMPARE(column(RunsTableModel::ValTop1).back(), QStringLiteral("-"));
  }

  void tagsAndNotesReachTheStoreAndFilter() {
    RunsView view;
    view.setStorePath(path_);
    QString error;
    QVERIFY2(view.addTag({alpha_, gamma_}, QStringLiteral("baseline"), &error), qPrintable(error));
    {
      const RunStore s(path_.toStdString());
      QCOMPARE(s.tags(alpha_), std::vector<std::string>{"baseline"});
      QCOMPARE(s.tags(gamma_), std::vector<std::string>{"baseline"});
      QVERIFY(s.tags(beta_).empty());
    }
    QCOMPARE(cell(view, alpha_, RunsTableModel::Tags), QStringLiteral("baseline"));
    // The store refuses a tag of two words; nothing is written.
    QVERIFY(!view.addTag({beta_}, QStringLiteral("two words"), &error));
    QVERIFY2(error.contains(QStringLiteral("single words")), qPrintable(error));
    QVERIFY(RunStore(path_.toStdString()).tags(beta_).empty());

    QVERIFY2(view.addNote({beta_}, QStringLiteral("the lr sweep winner"), &error),
             qPrintable(error));
    {
      const RunStore s(path_.toStdString());
      QCOMPARE(s.notes(beta_).size(), size_t{1});
      QCOMPARE(s.notes(beta_).front().text, std::string("the lr sweep winner"));
    }
    QCOMPARE(cell(view, beta_, RunsTableModel::Notes), QStringLiteral("1"));

    view.setFilterText(QStringLiteral("baseline"));
    QCOMPARE(view.runsModel()->rowCount(), 2);
    QVERIFY(view.runsModel()->rowOf(alpha_) >= 0 && view.runsModel()->rowOf(gamma_) >= 0);
    view.setFilterText(QStringLiteral("BETA"));
    QCOMPARE(view.runsModel()->rowCount(), 1);
    QCOMPARE(view.runsModel()->runAt(0), beta_);
    view.setFilterText(QStringLiteral("sweep"));
    QCOMPARE(view.runsModel()->rowCount(), 1);
    QCOMPARE(view.runsModel()->runAt(0), beta_);
    view.setFilterText(QStringLiteral("no run has this"));
    QCOMPARE(view.runsModel()->rowCount(), 0);
    view.setFilterText({});
    QCOMPARE(view.runsModel()->rowCount(), 4);

    QVERIFY2(view.removeTag({alpha_, gamma_}, QStringLiteral("baseline"), &error),
             qPrintable(error));
    QVERIFY(RunStore(path_.toStdString()).tags(alpha_).empty());
    QCOMPARE(cell(view, alpha_, RunsTableModel::Tags), QString());
  }

  void overlayKeepsEveryPointAndDrawsPerPixel() {
    RunsView view;
    view.resize(1200, 800);
    view.setStorePath(path_);
    view.selectRuns({alpha_, beta_});
    QCOMPARE(view.selectedRuns(), (QList<qint64>{alpha_, beta_}));
    RunOverlay* overlay = view.overlay();
    CurvePlot* plot = overlay->plot();
    QCOMPARE(overlay->metric(), std::string("loss"));
    QCOMPARE(plot->seriesCount(), 2);
    const RunStore s(path_.toStdString());
    const int a = series_of(*overlay, alpha_), b = series_of(*overlay, beta_);
    QVERIFY(a >= 0 && b >= 0);
    QCOMPARE(plot->pointCount(a), s.step_curve(alpha_).size());
    QCOMPARE(plot->pointCount(b), s.step_curve(beta_).size());
    QCOMPARE(plot->pointCount(b), static_cast<size_t>(kLongSteps));
    QCOMPARE(plot->seriesY(b)[123'456], 2.0 / (1.0 + 123.456));
    plot->replot();
    const size_t columns = static_cast<size_t>(std::max(plot->width(), plot->axisRect()->width()));
    const size_t drawn = plot->drawnPointCount();
    QVERIFY2(drawn >= columns / 2, qPrintable(QString::number(drawn)));
    QVERIFY2(drawn <= 2 * (4 * columns + 2),
             qPrintable(QStringLiteral("%1 drawn for %2 columns").arg(drawn).arg(columns)));
  }

  void xAxisFollowsTheChooser() {
    RunsView view;
    view.setStorePath(path_);
    view.selectRuns({alpha_, tiny_});
    RunOverlay* overlay = view.overlay();
    CurvePlot* plot = overlay->plot();
    const int a = series_of(*overlay, alpha_), t = series_of(*overlay, tiny_);
    QVERIFY(a >= 0 && t >= 0);
    QCOMPARE(plot->seriesX(a).front(), 0.0);
    QCOMPARE(plot->seriesX(a).back(), 19.0);

    // Epochs: each step a tenth of its epoch of ten.
    overlay->setAxis(CurveAxis::Epoch);
    QCOMPARE(plot->pointCount(a), size_t{20});
    QCOMPARE(plot->seriesX(a).front(), 0.1);
    QCOMPARE(plot->seriesX(a)[9], 1.0);
    QCOMPARE(plot->seriesX(a).back(), 2.0);

    // Wall time: half a second a step (64 images at 128/s), the second
    // epoch's steps after the first epoch's end, 100 s after the start.
    overlay->setAxis(CurveAxis::WallTime);
    QCOMPARE(plot->pointCount(a), size_t{20});
    QCOMPARE(plot->seriesX(a).front(), 0.5);
    QCOMPARE(plot->seriesX(a)[9], 5.0);
    QVERIFY(std::abs(plot->seriesX(a)[10] - 100.5) < 1e-6);
    QVERIFY(std::abs(plot->seriesX(a).back() - 105.0) < 1e-6);
    // The trainer's run: its global batch read from its configuration.
    const std::vector<double>& tx = plot->seriesX(t);
    QVERIFY(std::is_sorted(tx.begin(), tx.end()));
    QVERIFY(tx.front() > 0);

    // An epoch metric sits at each epoch's end on every axis.
    overlay->setMetric("val_top1");
    QCOMPARE(plot->pointCount(a), size_t{2});
    QCOMPARE(plot->seriesY(a), (std::vector<double>{80.0, 85.0}));
    QVERIFY(std::abs(plot->seriesX(a)[0] - 100.0) < 1e-6);
    QVERIFY(std::abs(plot->seriesX(a)[1] - 200.0) < 1e-6);
    overlay->setAxis(CurveAxis::Epoch);
    QCOMPARE(plot->seriesX(a), (std::vector<double>{1.0, 2.0}));
    overlay->setAxis(CurveAxis::Step);
    QCOMPARE(plot->seriesX(a), (std::vector<double>{10.0, 20.0}));
  }

  void legendSitsUnderThePlotAndWraps() {
    RunsView view;
    view.resize(1400, 860);
    view.setStorePath(path_);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.selectRuns({alpha_, beta_, tiny_, gamma_});
    CurvePlot* plot = view.overlay()->plot();
    plot->replot();
    QCPLegend* legend = plot->legend;
    QVERIFY(legend->visible());
    // One entry per run; the legend's grid may hold empty cells after the last.
    std::vector<QCPAbstractLegendItem*> items;
    for (int i = 0; i < legend->itemCount(); ++i)
      if (legend->item(i)) items.push_back(legend->item(i));
    QCOMPARE(items.size(), size_t{4});
    // Below the axis rect, in the plot's own layout, not inset over the data.
    const QRect data = plot->axisRect()->outerRect();
    QVERIFY2(legend->outerRect().top() >= data.bottom(),
             qPrintable(QStringLiteral("legend top %1, data bottom %2")
                            .arg(legend->outerRect().top())
                            .arg(data.bottom())));
    QVERIFY(!legend->outerRect().intersects(plot->axisRect()->rect()));
    QVERIFY(legend->outerRect().right() <= plot->width());
    // Four runs do not fit one row: the last goes on a second.
    QVERIFY(items[3]->outerRect().top() >= items[0]->outerRect().bottom());
    QCOMPARE(items[1]->outerRect().top(), items[0]->outerRect().top());
  }

  void epochAndStepTicksAreWholeNumbers() {
    RunsView view;
    view.resize(1400, 860);
    view.setStorePath(path_);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.selectRuns({alpha_});  // two epochs of ten steps: x from 0.1 to 2 epochs
    RunOverlay* overlay = view.overlay();
    CurvePlot* plot = overlay->plot();
    const auto whole = [&](const QString& what) {
      plot->replot();
      const QVector<double> ticks = plot->xAxis->tickVector();
      QVERIFY2(ticks.size() >= 2, qPrintable(what));
      for (const double t : ticks)
        QVERIFY2(t == std::round(t), qPrintable(QStringLiteral("%1: tick %2").arg(what).arg(t)));
      for (const QString& label : plot->xAxis->tickVectorLabels())
        QVERIFY2(!label.contains(QLatin1Char('.')),
                 qPrintable(what + QStringLiteral(": ") + label));
    };
    // The user picks Epoch in the x axis chooser, the item after Step.
    QComboBox* axis = overlay->axisSelector();
    axis->setFocus();
    QTest::keyClick(axis, Qt::Key_Down);
    QCOMPARE(overlay->axis(), CurveAxis::Epoch);
    QCOMPARE(plot->xAxis->range().lower, 0.1);
    QCOMPARE(plot->xAxis->range().upper, 2.0);
    whole(QStringLiteral("epochs"));
    const QVector<double> ticks = plot->xAxis->tickVector();
    QVERIFY(ticks.contains(1.0) && ticks.contains(2.0));
    // Wall time keeps its h:mm:ss ticks; back on steps (0 to 19), whole numbers again.
    QTest::keyClick(axis, Qt::Key_Down);
    QCOMPARE(overlay->axis(), CurveAxis::WallTime);
    QVERIFY(plot->xAxis->ticker().dynamicCast<QCPAxisTickerTime>());
    QTest::keyClick(axis, Qt::Key_Home);
    QCOMPARE(overlay->axis(), CurveAxis::Step);
    whole(QStringLiteral("steps"));
  }

  void configurationDiffShowsWhatDiffers() {
    RunsView view;
    view.setStorePath(path_);
    view.selectRuns({alpha_, beta_});
    ConfigDiffModel* diff = view.configDiff();
    const QModelIndex lr = diff->indexOf(QStringLiteral("training/optimizer/lr"));
    QVERIFY(lr.isValid());
    QCOMPARE(lr.parent(), diff->groupIndex(QStringLiteral("Training")));
    QCOMPARE(lr.data().toString(), QStringLiteral("optimizer/lr"));
    QCOMPARE(diff->columnCount(), 3);
    QCOMPARE(lr.siblingAtColumn(1).data().toString(), QStringLiteral("0.1"));
    QCOMPARE(lr.siblingAtColumn(2).data().toString(), QStringLiteral("0.01"));
    QCOMPARE(diff->headerData(1, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("#%1\nalpha").arg(alpha_));
    QCOMPARE(diff->headerData(2, Qt::Horizontal, Qt::DisplayRole).toString(),
             QStringLiteral("#%1\nbeta").arg(beta_));
    QVERIFY(!diff->indexOf(QStringLiteral("training/global_batch")).isValid());  // the same
    QVERIFY2(view.compareSummary().contains(QStringLiteral("run %1").arg(beta_)),
             qPrintable(view.compareSummary()));
    // One run: nothing to compare.
    view.selectRuns({alpha_});
    QCOMPARE(diff->rowCount(), 0);
  }

  // lenet-fashion against resnet8-fashion: compare_runs() lists the models'
  // entries by place in the node list (every later layer "differs"); the
  // Compare tab shows one row per layer, matched by id, in counted groups.
  void differentModelsDiffLayerByLayerInGroups() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("models.sqlite"));
    RunStore s(path.toStdString());
    const int64_t lenet = write_run(s, start_of_project("lenet-fashion.json"), 10, 10, 0.5, {0.8});
    const int64_t resnet =
        write_run(s, start_of_project("resnet8-fashion.json"), 10, 10, 0.5, {0.85});

    RunsView view;
    view.resize(1400, 860);  // the main window's first size
    view.setStorePath(path);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.selectRuns({lenet, resnet});
    QCOMPARE(view.tabs()->currentIndex(), 1);  // Compare
    ConfigDiffModel* diff = view.configDiff();

    QStringList titles;
    for (int g = 0; g < diff->groupCount(); ++g) titles << diff->groupTitle(g);
    // The same dataset, so no Dataset group; the project names differ.
    QCOMPARE(titles, (QStringList{"Model", "Training", "Devices and other"}));

    // The layers in one model only, plus the shared ones that differ: conv1's
    // parameters, and relu1 and loss fed by other layers (input is the same).
    const std::set<std::string> a = layer_ids("lenet-fashion.json");
    const std::set<std::string> b = layer_ids("resnet8-fashion.json");
    int only_a = 0, only_b = 0;
    for (const std::string& id : a) only_a += b.count(id) == 0 ? 1 : 0;
    for (const std::string& id : b) only_b += a.count(id) == 0 ? 1 : 0;
    QCOMPARE(only_a, 10);
    QCOMPARE(only_b, 28);
    const int layers = 3 + only_a + only_b;
    const QModelIndex model = diff->groupIndex(QStringLiteral("Model"));
    QCOMPARE(diff->rowCount(model), layers);
    QCOMPARE(model.data().toString(),
             QStringLiteral("Model: %1 differences (%2 layers / %3 layers)")
                 .arg(layers)
                 .arg(a.size())
                 .arg(b.size()));
    QCOMPARE(model.siblingAtColumn(1).data().toString(), QStringLiteral("%1 layers").arg(a.size()));
    QCOMPARE(model.siblingAtColumn(2).data().toString(), QStringLiteral("%1 layers").arg(b.size()));
    const QModelIndex training = diff->groupIndex(QStringLiteral("Training"));
    QCOMPARE(training.data().toString(), QStringLiteral("Training: 1 difference"));
    QVERIFY(!diff->indexOf(QStringLiteral("model/input")).isValid());

    // A shared layer: only what differs, each run's values in its own column.
    const QModelIndex conv1 = diff->indexOf(QStringLiteral("model/conv1"));
    QCOMPARE(conv1.parent(), model);
    QCOMPARE(conv1.data().toString(), QStringLiteral("conv1"));
    QCOMPARE(conv1.siblingAtColumn(1).data().toString(),
             QStringLiteral("out_channels 6, kernel 5, padding 2, bias true"));
    QCOMPARE(conv1.siblingAtColumn(2).data().toString(),
             QStringLiteral("out_channels 16, kernel 3, padding 1, bias false"));
    QCOMPARE(conv1.data(Qt::ToolTipRole).toString(),
             QStringLiteral("conv1: out_channels 6 → 16, kernel 5 → 3, padding 2 → 1, "
                            "bias true → false"));
    const QModelIndex relu1 = diff->indexOf(QStringLiteral("model/relu1"));
    QCOMPARE(relu1.siblingAtColumn(1).data().toString(), QStringLiteral("from conv1"));
    QCOMPARE(relu1.siblingAtColumn(2).data().toString(), QStringLiteral("from bn1"));
    // A layer one model lacks is one line, whatever its fields.
    const QModelIndex pool1 = diff->indexOf(QStringLiteral("model/pool1"));
    QCOMPARE(pool1.data().toString(), QStringLiteral("− pool1"));
    QCOMPARE(pool1.siblingAtColumn(1).data().toString(),
             QStringLiteral("MaxPool2d(kernel 2, stride 2, padding 0) ← relu1"));
    QCOMPARE(pool1.siblingAtColumn(2).data().toString(), QStringLiteral("-"));
    const QModelIndex add = diff->indexOf(QStringLiteral("model/s1b1_add"));
    QCOMPARE(add.data().toString(), QStringLiteral("+ s1b1_add"));
    QCOMPARE(add.siblingAtColumn(1).data().toString(), QStringLiteral("-"));
    QCOMPARE(add.siblingAtColumn(2).data().toString(), QStringLiteral("Add ← s1b1_bn2, relu1"));
    // The other groups keep their entries, named within the group.
    const QModelIndex lr = diff->indexOf(QStringLiteral("training/optimizer/lr"));
    QCOMPARE(lr.parent(), training);
    QCOMPARE(lr.siblingAtColumn(1).data().toString(), QStringLiteral("0.05"));
    QCOMPARE(lr.siblingAtColumn(2).data().toString(), QStringLiteral("0.1"));
    const QModelIndex name = diff->indexOf(QStringLiteral("project/name"));
    QCOMPARE(name.data().toString(), QStringLiteral("project name"));
    QCOMPARE(name.siblingAtColumn(2).data().toString(), QStringLiteral("resnet8-fashion"));
    QVERIFY2(
        view.compareSummary().startsWith(QStringLiteral("%1 settings differ between runs %2, %3.")
                                             .arg(diff->differenceCount())
                                             .arg(lenet)
                                             .arg(resnet)),
        qPrintable(view.compareSummary()));

    // The flat list had a row per entry; the tree opens with the long Model
    // group closed (its row gives the count) and the others open.
    const int flat = static_cast<int>(store::compare_runs(s, {lenet, resnet}).differences.size());
    ConfigDiffView* pane = view.configDiffView();
    QTreeView* tree = pane->tree();
    QSortFilterProxyModel* shown = pane->filtered();
    QVERIFY(!tree->isExpanded(shown->index(0, 0)));
    QVERIFY(tree->isExpanded(shown->index(1, 0)));
    QVERIFY(tree->isExpanded(shown->index(2, 0)));
    // Group rows span the run columns, so their titles are not cut to the name column.
    for (int g = 0; g < shown->rowCount(); ++g) QVERIFY(tree->isFirstColumnSpanned(g, {}));
    const int rows = shown_rows(*tree);
    QCOMPARE(rows, diff->groupCount() + diff->differenceCount() - layers);
    qInfo(
        "lenet-fashion vs resnet8-fashion: %d flat rows before; now %d rows shown, %d with "
        "Model open",
        flat, rows, rows + layers);
    QVERIFY2(rows < flat / 4, qPrintable(QStringLiteral("%1 of %2").arg(rows).arg(flat)));

    // The runs' columns share the pane's width: nothing to scroll sideways.
    QHeaderView* header = tree->header();
    QCOMPARE(tree->horizontalScrollBar()->maximum(), 0);
    QVERIFY(header->length() <= tree->viewport()->width());
    QVERIFY2(header->sectionSize(1) >= 100 && header->sectionSize(2) >= 100,
             qPrintable(
                 QStringLiteral("%1, %2").arg(header->sectionSize(1)).arg(header->sectionSize(2))));

    // The user opens Model: a click on its row, then the Right key.
    const QModelIndex modelRow = shown->index(0, 0);
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, tree->visualRect(modelRow).center());
    QCOMPARE(tree->currentIndex(), modelRow);
    QTest::keyClick(tree, Qt::Key_Right);
    QVERIFY(tree->isExpanded(modelRow));
    QCOMPARE(shown_rows(*tree), rows + layers);
    QCOMPARE(tree->horizontalScrollBar()->maximum(), 0);
    // A whole layer is wider than its column: elided there, whole in its tooltip.
    const QModelIndex s2 =
        shown->mapFromSource(diff->indexOf(QStringLiteral("model/s2b1_conv1")).siblingAtColumn(2));
    const QString value = s2.data().toString();
    QVERIFY2(tree->fontMetrics().horizontalAdvance(value) > header->sectionSize(2),
             qPrintable(value));
    QCOMPARE(s2.data(Qt::ToolTipRole).toString(),
             QStringLiteral("Run %1: %2").arg(resnet).arg(value));

    // Typing in the filter keeps the rows that mention it, their groups open.
    QTest::keyClicks(pane->filterEdit(), QStringLiteral("conv1"));
    QCOMPARE(shown->rowCount(), 1);  // only Model has rows that mention conv1
    const QModelIndex kept = shown->index(0, 0);
    QCOMPARE(kept.data().toString(), model.data().toString());
    QVERIFY(tree->isExpanded(kept));
    QVERIFY(shown->rowCount(kept) >= 5);  // conv1, relu1, s1b1_conv1, s2b1_conv1, s3b1_conv1
    for (int r = 0; r < shown->rowCount(kept); ++r) {
      QString text;
      for (int c = 0; c < shown->columnCount(); ++c)
        text += shown->index(r, c, kept).data().toString();
      QVERIFY2(text.contains(QStringLiteral("conv1")), qPrintable(text));
    }
    pane->filterEdit()->clear();
    QCOMPARE(shown->rowCount(), diff->groupCount());
    QCOMPARE(shown_rows(*tree), rows);
  }

  void exportsCsvOfSeveralRuns() {
    RunsView view;
    view.setStorePath(path_);
    const QString out = dir_.filePath(QStringLiteral("curves.csv"));
    QString error;
    QVERIFY2(view.exportCsv({alpha_, tiny_}, out, &error), qPrintable(error));
    const QList<QByteArray> lines = read_all(out).split('\n');
    QCOMPARE(lines.front(), QByteArray(store::kCurvesCsvHeader));
    const RunStore s(path_.toStdString());
    const auto count = [&](int64_t run, const char* kind) {
      const QByteArray prefix = QByteArray::number(static_cast<qlonglong>(run)) + ',' + kind + ',';
      return std::count_if(lines.begin(), lines.end(),
                           [&](const QByteArray& l) { return l.startsWith(prefix); });
    };
    QCOMPARE(count(alpha_, "step"), 20);
    QCOMPARE(count(alpha_, "epoch"), 2);
    QCOMPARE(static_cast<size_t>(count(tiny_, "step")), s.step_curve(tiny_).size());
    QCOMPARE(count(tiny_, "epoch"), 2);
    QCOMPARE(count(beta_, "step"), 0);

    QVERIFY(!view.exportCsv({alpha_}, dir_.filePath(QStringLiteral("no/such/dir/x.csv")), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!view.exportCsv({alpha_, 999'999}, dir_.filePath(QStringLiteral("x.csv")), &error));
    QVERIFY2(error.contains(QStringLiteral("999999")), qPrintable(error));
    QVERIFY(!QFile::exists(dir_.filePath(QStringLiteral("x.csv"))));
  }

  void deletesRunsButNotALiveOne() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("delete.sqlite"));
    RunStore s(path.toStdString());
    const int64_t done = write_run(s, start_of("done", 0.1, 64), 10, 10, 0.5, {0.5});
    const int64_t kept = write_run(s, start_of("kept", 0.1, 64), 10, 10, 0.5, {0.5});
    const int64_t live = s.begin_run(start_of("live", 0.1, 64));  // this process writes it

    RunsView view;
    view.setStorePath(path);
    QCOMPARE(view.runsModel()->rowCount(), 3);
    view.selectRuns({done, live, kept});
    QString error;
    QVERIFY(!view.deleteRuns({done, live}, &error));
    QVERIFY2(error.contains(QStringLiteral("still being recorded")), qPrintable(error));
    QVERIFY(!s.has_run(done));
    QVERIFY(s.has_run(live));
    QVERIFY(s.has_run(kept));
    QCOMPARE(s.step_curve(kept).size(), size_t{10});
    QCOMPARE(view.runsModel()->rowOf(done), -1);
    QVERIFY(view.runsModel()->rowOf(live) >= 0);
    QCOMPARE(view.selectedRuns(), (QList<qint64>{kept, live}));

    s.end_run(live, store::RunStatus::Stopped);
    QVERIFY2(view.deleteRuns({live}, &error), qPrintable(error));
    QVERIFY(!s.has_run(live));
    QCOMPARE(view.runsModel()->rowCount(), 1);
  }

  void resumeIsOfferedOnRunsThatEndedEarly() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("resume.sqlite"));
    RunStore s(path.toStdString());
    const int64_t done = write_run(s, start_of("done", 0.1, 64), 10, 10, 0.5, {0.5});
    const int64_t stopped = s.begin_run(start_of("stopped", 0.1, 64));
    s.end_run(stopped, store::RunStatus::Stopped);
    const int64_t live = s.begin_run(start_of("live", 0.1, 64));

    RunsView view;
    view.setStorePath(path);
    QAction* resume = nullptr;
    for (QAction* a : view.actions())
      if (a->text() == QStringLiteral("Resume")) resume = a;
    QVERIFY(resume);
    QSignalSpy asked(&view, &RunsView::resumeRequested);
    for (const int64_t id : {done, live}) {
      view.selectRuns({id});
      QVERIFY2(!resume->isEnabled(), qPrintable(QString::number(id)));
    }
    view.selectRuns({stopped, done});
    QVERIFY(!resume->isEnabled());  // one run at a time
    view.selectRuns({stopped});
    QVERIFY(resume->isEnabled());
    resume->trigger();
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked[0][0].toLongLong(), stopped);
    s.end_run(live, store::RunStatus::Stopped);
  }

  // Follow live is offered on the one run being recorded, and asks for it.
  void followIsOfferedOnARunBeingRecorded() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("follow.sqlite"));
    RunStore s(path.toStdString());
    const int64_t done = write_run(s, start_of("done", 0.1, 64), 10, 10, 0.5, {0.5});
    const int64_t live = s.begin_run(start_of("live", 0.1, 64));
    RunsView view;
    view.setStorePath(path);
    QAction* follow = nullptr;
    for (QAction* a : view.actions())
      if (a->text() == QStringLiteral("Follow live")) follow = a;
    QVERIFY(follow);
    QSignalSpy asked(&view, &RunsView::followRequested);
    view.selectRuns({done});
    QVERIFY(!follow->isEnabled());
    view.selectRuns({done, live});
    QVERIFY(!follow->isEnabled());  // one run at a time
    view.selectRuns({live});
    QVERIFY(follow->isEnabled());
    follow->trigger();
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked[0][0].toLongLong(), live);
    // Once it ends (seen at the next read of the store), no more.
    s.end_run(live, store::RunStatus::Finished);
    view.refresh();
    QVERIFY(!follow->isEnabled());
  }

  void aFileThatIsNotAStoreIsShownAndLeftAlone() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("notes.sqlite"));
    QByteArray bytes(8192, '\0');
    std::mt19937 random(42);
    for (char& c : bytes) c = static_cast<char>(random());
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(bytes);
    }
    RunsView view;
    view.setStorePath(path);
    QVERIFY2(view.errorText().contains(QStringLiteral("not a run store")),
             qPrintable(view.errorText()));
    const auto* label = view.findChild<QLabel*>(QStringLiteral("runsError"));
    QVERIFY(label && label->isVisibleTo(&view));
    QCOMPARE(label->text(), view.errorText());
    QCOMPARE(view.runsModel()->rowCount(), 0);
    QString error;
    QVERIFY(!view.addTag({1}, QStringLiteral("x"), &error));
    QVERIFY(error.contains(QStringLiteral("not a run store")));
    QVERIFY(!view.exportCsv({1}, dir.filePath(QStringLiteral("out.csv")), &error));
    QVERIFY(!view.deleteRuns({1}, &error));
    view.refresh();
    QCOMPARE(read_all(path), bytes);
    QVERIFY(!QFile::exists(path + QStringLiteral("-wal")));

    // A good store again clears the message.
    view.setStorePath(path_);
    QVERIFY(view.errorText().isEmpty());
    QVERIFY(!label->isVisibleTo(&view));
    QCOMPARE(view.runsModel()->rowCount(), 4);
  }

  void pollsForRunsRecordedElsewhere() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("poll.sqlite"));
    RunStore s(path.toStdString());
    const int64_t first = write_run(s, start_of("first", 0.1, 64), 10, 10, 0.5, {0.5});
    RunsView view;
    view.resize(1000, 700);
    view.setStorePath(path);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.selectRuns({first});
    const int64_t second = write_run(s, start_of("second", 0.1, 64), 10, 10, 0.5, {0.5});
    QTRY_COMPARE_WITH_TIMEOUT(view.runsModel()->rowCount(), 2, 5000);
    QVERIFY(view.runsModel()->rowOf(second) >= 0);
    QCOMPARE(view.selectedRuns(), QList<qint64>{first});

    // Double-clicking a run asks for it to be opened.
    QSignalSpy activated(&view, &RunsView::runActivated);
    QTableView* table = view.table();
    const QModelIndex index = view.sortedRuns()->mapFromSource(
        view.runsModel()->index(view.runsModel()->rowOf(second), 1));
    const QPoint at = table->visualRect(index).center();
    QVERIFY2(table->viewport()->rect().contains(at),
             qPrintable(QStringLiteral("%1,%2 in %3x%4")
                            .arg(at.x())
                            .arg(at.y())
                            .arg(table->viewport()->width())
                            .arg(table->viewport()->height())));
    // A real double click starts with a click, which the view's double-click handling expects.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.front().front().toLongLong(), second);
  }
};

QTEST_MAIN(TestRunsView)
#include "test_runs_view.moc"

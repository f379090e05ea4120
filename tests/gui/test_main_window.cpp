// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench window end to end: it opens the default project with the
// views that work, problems select their node, projects save and reload
// unchanged, bad files are refused without losing the open project, compile
// fills the memory view, devices are a project edit, templates load, the
// window layout is remembered and every view renders to a PNG. And the whole
// journey: a network built by drags, undone and redone, saved and reloaded,
// compiled, trained for a few steps with the loss plot filling, stopped, and
// found in the runs view; with the views linked through the selected node.
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolBar>
#include <QTreeWidget>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/run_store.h>
#include <renaissance/store_location.h>
#include "analysis/layer_table_model.h"
#include "analysis/network_analysis_panel.h"
#include "canvas_driver.h"
#include "designer/designer_scene.h"
#include "designer/designer_view.h"
#include "designer/edge_item.h"
#include "designer/model_editor.h"
#include "designer/node_item.h"
#include "designer/properties_panel.h"
#include "device_selector.h"
#include "main_window.h"
#include "memory/memory_view.h"
#include "memory/region_bands.h"
#include "onnx_export_file.h"
#include "onnx_import_file.h"
#include "plot/curve_plot.h"
#include "predict/try_model_dialog.h"
#include "problems_panel.h"
#include "project_document.h"
#include "runs/runs_table_model.h"
#include "runs/runs_view.h"
#include "settings/set_training_command.h"
#include "settings/training_settings_panel.h"
#include "template_catalog.h"
#include "timeline/timeline_canvas.h"
#include "timeline/timeline_model.h"
#include "timeline/timeline_view.h"
#include "training/training_view.h"

using namespace tr;
using namespace tr::gui;

namespace {

QString json_of(const Project& p) {
  Project q = p;
  q.source_path.clear();
  return QString::fromStdString(project_to_json(q));
}

struct Window {
  MainWindow w;
  Window() {
    w.resize(1300, 850);
    w.show();
    QString error;
    if (!w.openProject(MainWindow::defaultProjectPath(), &error)) qFatal("%s", qPrintable(error));
  }
  ProjectDocument* doc() { return w.document(); }
  int index(const char* id) { return doc()->nodeIndex(id); }
};

}  // namespace

class TestMainWindow : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("RenaissanceTests"));
    QCoreApplication::setApplicationName(QStringLiteral("Workbench"));
    QSettings().clear();
  }

  void opensTheDefaultProjectWithWorkingViewsOnly() {
    QVERIFY(MainWindow::defaultProjectPath().endsWith("projects/lenet-fashion.json"));
    Window win;
    QCOMPARE(win.doc()->project().name, std::string("lenet-fashion"));
    QCOMPARE(win.w.designer()->designerScene()->nodeCount(), 14);
    QVERIFY(win.w.windowTitle().startsWith("lenet-fashion.json"));
    QCOMPARE(win.w.tabs()->count(), 6);
    const char* tabs[] = {"Design", "Memory", "Timeline", "Training", "Runs", "Data"};
    for (int i = 0; i < 6; ++i) QCOMPARE(win.w.tabs()->tabText(i), QLatin1String(tabs[i]));
    QVERIFY(win.w.action("train")->isEnabled());
    QVERIFY(!win.w.action("pause")->isEnabled());
    QVERIFY(!win.w.action("stop")->isEnabled());
    QCOMPARE(win.w.action("train")->shortcut(), QKeySequence(QStringLiteral("Ctrl+R")));
    QCOMPARE(win.w.action("compile")->shortcut(), QKeySequence(Qt::Key_F5));
    QCOMPARE(win.w.action("save")->shortcut(), QKeySequence(QKeySequence::Save));
    // A valid project is compiled on opening.
    QVERIFY(win.w.memoryView()->compiled());
    QVERIFY(!win.w.memoryView()->isStale());
    QCOMPARE(win.w.problems()->problemCount(), 0);
    // The device choice shows the project's and offers CPU ranks.
    QCOMPARE(win.w.deviceSelector()->currentDevices().str(), std::string("cpu:1"));
    QVERIFY(win.w.deviceSelector()->findData(QStringLiteral("cpu:4")) >= 0);
  }

  // A point picked on the Memory view's recomputation curve becomes the
  // project's memory budget, one undoable step; compiling again recomputes.
  void aPickedBudgetIsOneUndoableSetting() {
    Window win;
    QCOMPARE(win.doc()->project().training.memory_budget_mib, int64_t{0});
    emit win.w.memoryView()->budgetPicked(6);
    QCOMPARE(win.doc()->project().training.memory_budget_mib, int64_t{6});
    win.w.action("compile")->trigger();
    QTRY_VERIFY(win.w.memoryView()->compiled() && !win.w.memoryView()->isStale());
    QCOMPARE(win.w.memoryView()->compiled()->memory_budget(), uint64_t{6} << 20);
    win.doc()->undoStack()->undo();
    QCOMPARE(win.doc()->project().training.memory_budget_mib, int64_t{0});
  }

  // Ctrl+Z and Ctrl+Shift+Z with the cursor still in the field just edited
  // undo and redo the project, in the layer properties and the training
  // settings alike; a value typed but not yet committed is committed first.
  void undoKeysWorkInTheFieldJustEdited() {
    Window win;
    QApplication::setActiveWindow(&win.w);
    QVERIFY(QTest::qWaitForWindowActive(&win.w));
    const int conv2 = win.index("conv2");
    win.w.findChild<QDockWidget*>(QStringLiteral("propertiesDock"))->raise();
    win.w.designer()->designerScene()->selectNodes({conv2});
    auto* channels =
        qobject_cast<QSpinBox*>(win.w.properties()->fieldEditor("params.out_channels"));
    QVERIFY(channels);
    const auto out = [&] {
      return win.doc()->project().model.nodes[static_cast<size_t>(conv2)].params.out_channels;
    };
    QTRY_VERIFY(channels->isVisible());
    channels->setFocus();
    QTRY_VERIFY(channels->hasFocus());
    channels->selectAll();
    QTest::keyClicks(channels, "32");
    QTest::keyClick(channels, Qt::Key_Return);
    QCOMPARE(out(), int64_t{32});
    QVERIFY2(channels->hasFocus(), "the field just edited keeps the cursor");
    QTest::keyClick(channels, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(out(), int64_t{16});
    QCOMPARE(channels->value(), 16);
    QTest::keyClick(channels, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(out(), int64_t{32});
    QTest::keyClick(channels, Qt::Key_Y, Qt::ControlModifier);  // nothing left to redo
    QCOMPARE(out(), int64_t{32});
    // Typed, not committed: Ctrl+Z commits it, then undoes it.
    channels->selectAll();
    QTest::keyClicks(channels, "40");
    QTest::keyClick(channels, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(out(), int64_t{32});
    QTest::keyClick(channels, Qt::Key_Y, Qt::ControlModifier);
    QCOMPARE(out(), int64_t{40});

    // The same in the training settings.
    win.w.findChild<QDockWidget*>(QStringLiteral("settingsDock"))->raise();
    QCoreApplication::processEvents();
    auto* epochs = qobject_cast<QSpinBox*>(win.w.settingsPanel()->fieldEditor("training.epochs"));
    QVERIFY(epochs);
    const int64_t before = win.doc()->project().training.epochs;
    QTRY_VERIFY(epochs->isVisible());
    epochs->setFocus();
    QTRY_VERIFY(epochs->hasFocus());
    epochs->selectAll();
    QTest::keyClicks(epochs, "7");
    QTest::keyClick(epochs, Qt::Key_Return);
    QCOMPARE(win.doc()->project().training.epochs, int64_t{7});
    QTest::keyClick(epochs, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(win.doc()->project().training.epochs, before);
    QTest::keyClick(epochs, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(win.doc()->project().training.epochs, int64_t{7});
  }

  // Pause becoming Resume does not move the toolbar's buttons after it.
  void theToolbarKeepsStillWhenPauseBecomesResume() {
    Window win;
    QAction* pause = win.w.action("pause");
    auto* bar = win.w.findChild<QToolBar*>(QStringLiteral("mainToolBar"));
    QVERIFY(bar);
    QWidget* stop = bar->widgetForAction(win.w.action("stop"));
    QCoreApplication::processEvents();
    const int x = stop->x();
    const QString text = pause->text();
    pause->setText(QStringLiteral("&Resume"));
    QCoreApplication::processEvents();
    bar->layout()->activate();
    QCOMPARE(stop->x(), x);
    pause->setText(text);
  }

  // A run from the workbench with no checkpoint folder keeps its final
  // weights: Try the Model opens on them and says so (before any run it says
  // why it has none), Enter in its field takes a typed path, and Start from
  // weights in the training settings trains from them.
  void tryTheModelOpensOnTheLastRunsWeights() {
    QTemporaryDir dir;
    const QByteArray store = qgetenv("RENAISSANCE_STORE");
    qputenv("RENAISSANCE_STORE", QFile::encodeName(dir.filePath("runs.sqlite")));
    const auto restore = qScopeGuard([&] { qputenv("RENAISSANCE_STORE", store); });
    Window win;
    TryModelDialog* d = win.w.tryModel();
    QVERIFY(d->checkpoint().isEmpty());
    QVERIFY2(d->weightsText().startsWith(QStringLiteral("No weights yet: train the model")),
             qPrintable(d->weightsText()));
    d->close();

    TrainingView* training = win.w.trainingView();
    TrainingRequest request = training->requestFromControls();
    QVERIFY(request.checkpoint_dir.isEmpty());  // the default: no checkpoints
    request.max_steps = 3;
    request.validate = false;
    request.profile_begin = -1;
    QString error;
    QVERIFY2(training->start(win.doc()->project(), request, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!training->isRunning(), 60000);
    const qint64 run = training->lastRunId();
    d = win.w.tryModel();
    QVERIFY2(QFileInfo(d->checkpoint()).isFile(), qPrintable(d->checkpoint()));
    QVERIFY2(d->weightsText().contains(
                 QStringLiteral("the final weights of run #%1 (finished at step 3)").arg(run)),
             qPrintable(d->weightsText()));
    const QString weights = d->checkpoint();
    // Enter takes what is typed: a wrong path is named, a right one described.
    auto* field = d->findChild<QLineEdit*>(QStringLiteral("checkpoint"));
    field->setText(dir.filePath("nowhere.ckpt"));
    QTest::keyClick(field, Qt::Key_Return);
    QVERIFY(d->isVisible());  // Enter opened no file dialog and closed nothing
    QVERIFY2(d->weightsText().contains(dir.filePath("nowhere.ckpt")), qPrintable(d->weightsText()));
    field->setText(weights);
    QTest::keyClick(field, Qt::Key_Return);
    QCOMPARE(d->weightsText(),
             QStringLiteral("Weights: %1 (of project 'lenet-fashion', step 3).").arg(weights));
    d->close();

    // Start from weights: a missing file blocks training, named in the Problems panel.
    auto* start =
        qobject_cast<QLineEdit*>(win.w.settingsPanel()->fieldEditor("training.init_from"));
    QVERIFY(start);
    QVERIFY(win.w.settingsPanel()->findChild<QPushButton*>("training.init_from.browse"));
    start->setText(dir.filePath("nowhere.ckpt"));
    win.w.settingsPanel()->commitPendingEdits();
    QCOMPARE(win.doc()->project().training.init_from, dir.filePath("nowhere.ckpt").toStdString());
    win.w.checkReadiness();
    bool named = false;
    for (int i = 0; i < win.w.problems()->problemCount(); ++i)
      named = named || win.w.problems()->fieldKey(i) == QStringLiteral("training.init_from");
    QVERIFY(named);
    QVERIFY(!win.w.action("train")->isEnabled());
    start->setText(weights);
    win.w.settingsPanel()->commitPendingEdits();
    win.w.checkReadiness();
    QVERIFY(win.w.action("train")->isEnabled());
    request = training->requestFromControls();
    request.max_steps = 2;
    request.validate = false;
    request.profile_begin = -1;
    QVERIFY2(training->start(win.doc()->project(), request, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!training->isRunning(), 60000);
    QVERIFY2(training->statusText().contains(QStringLiteral("started from")),
             qPrintable(training->statusText()));
    const store::RunStore s(dir.filePath("runs.sqlite").toStdString());
    QCOMPARE(QString::fromStdString(nlohmann::json::parse(s.run(training->lastRunId()).hyper_json)
                                        .at("init_from")
                                        .get<std::string>()),
             weights);
    win.doc()->undoStack()->undo();
    win.doc()->undoStack()->undo();
    QVERIFY(win.doc()->project().training.init_from.empty());
  }

  // With a sample open and no folder worked in yet, Open starts among the
  // samples and Save As in the user's projects folder, never among the
  // samples; once the user saved somewhere, both start there.
  void fileDialogsStartWhereTheWorkIs() {
    QSettings().remove(QStringLiteral("files/lastFolder"));
    Window win;
    QVERIFY(!win.doc()->samplePath().isEmpty());  // lenet-fashion is a sample
    QCOMPARE(win.w.openFolder(), MainWindow::samplesFolder());
    QVERIFY(win.w.saveFolder().endsWith(QStringLiteral("/Renaissance Projects")));
    QVERIFY(!MainWindow::isSample(QDir(win.w.saveFolder()).filePath("copy.json")));
    QTemporaryDir dir;
    QString error;
    QVERIFY2(win.w.saveProjectAs(dir.filePath("mine.json"), &error), qPrintable(error));
    QCOMPARE(win.w.openFolder(), dir.path());
    QCOMPARE(win.w.saveFolder(), dir.path());
    QSettings().remove(QStringLiteral("files/lastFolder"));
  }

  // View > Network analysis: the compiled design layer by layer, the same
  // table as plan --layers; a row's click shows the layer in the designer;
  // Export CSV writes it; an edit marks it out of date until compiled again.
  void networkAnalysisShowsEveryLayer() {
    Window win;
    // Build > Analyze Network compiles what changed and shows the table.
    win.doc()->undoStack()->push(new SetTrainingCommand(
        win.doc(), win.doc()->settings(),
        [&] {
          ProjectSettings s = win.doc()->settings();
          s.training.epochs = 4;
          return s;
        }(),
        QStringLiteral("training.epochs"), QStringLiteral("epochs")));
    QVERIFY(win.w.memoryView()->isStale());
    win.w.action("analyze")->trigger();
    QVERIFY(!win.w.memoryView()->isStale());
    NetworkAnalysisPanel* panel = win.w.networkAnalysis();
    QTRY_VERIFY(panel->isVisible());
    QCOMPARE(panel->model()->rowCount(), 14);
    QVERIFY2(panel->captionText().startsWith(
                 QStringLiteral("lenet-fashion: 14 layers, 61,706 parameters, ")),
             qPrintable(panel->captionText()));
    QVERIFY2(panel->captionText().contains(QStringLiteral("1 warning")),
             qPrintable(panel->captionText()));  // fc1 holds 78% of the parameters
    QCOMPARE(panel->model()->columnCount(), LayerTableModel::FirstVariant + 3 + 2);
    QCOMPARE(panel->model()
                 ->headerData(LayerTableModel::FirstVariant, Qt::Horizontal, Qt::DisplayRole)
                 .toString(),
             QStringLiteral("train activations"));
    int fc1 = -1;
    for (int r = 0; r < panel->model()->rowCount(); ++r)
      if (panel->model()->index(r, LayerTableModel::Layer).data().toString() == "fc1") fc1 = r;
    QVERIFY(fc1 >= 0);
    QCOMPARE(panel->model()->index(fc1, LayerTableModel::Parameters).data().toString(),
             QStringLiteral("48,120"));
    QVERIFY(panel->model()
                ->index(fc1, LayerTableModel::Layer)
                .data(Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("holds 78% of the network's parameters")));
    // The click shows fc1 in the designer.
    win.w.findChild<QDockWidget*>(QStringLiteral("analysisDock"))->raise();
    QTableView* table = panel->table();
    QTRY_VERIFY(table->isVisible());
    const QModelIndex shown = table->model()->index(fc1, LayerTableModel::Type);
    table->scrollTo(shown);
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(shown).center());
    QCOMPARE(win.w.currentView(), MainWindow::View::Design);
    QCOMPARE(win.w.properties()->node(), win.index("fc1"));
    QTemporaryDir dir;
    QString error;
    QVERIFY2(panel->exportCsv(dir.filePath("layers.csv"), &error), qPrintable(error));
    QFile csv(dir.filePath("layers.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().split('\n');
    QVERIFY(lines.front().startsWith("id,type,settings,output,parameters,forward_flops"));
    QVERIFY(lines[9].startsWith("fc1,Linear,120,\"[128,1,1,120]\",48120,"));
    // An edit: the table says it is out of date; a compile brings it back.
    auto* features =
        qobject_cast<QSpinBox*>(win.w.properties()->fieldEditor("params.out_features"));
    QVERIFY(features);
    features->setValue(60);
    QVERIFY2(panel->captionText().contains(QStringLiteral("the design changed since")),
             qPrintable(panel->captionText()));
    QVERIFY(win.w.compile());
    QVERIFY(!panel->captionText().contains(QStringLiteral("changed since")));
    QCOMPARE(panel->model()->index(fc1, LayerTableModel::Output).data().toString(),
             QStringLiteral("[128,1,1,60]"));
  }

  void problemsSelectTheirNode() {
    Window win;
    DesignerScene* scene = win.w.designer()->designerScene();
    scene->clearSelection();
    scene->edgeItem(5)->setSelected(true);  // relu2 -> pool2
    win.w.designer()->deleteSelection();
    ProblemsPanel* problems = win.w.problems();
    QVERIFY(problems->problemCount() >= 2);
    QVERIFY(win.w.memoryView()->isStale());
    // Click the row about pool2's dangling input.
    QTreeWidgetItem* row = nullptr;
    for (int i = 0; i < problems->topLevelItemCount(); ++i)
      if (problems->topLevelItem(i)->text(1) == QStringLiteral("pool2"))
        row = problems->topLevelItem(i);
    QVERIFY(row);
    QVERIFY(row->text(3).contains("not connected"));
    problems->scrollToItem(row);
    QTest::mouseClick(problems->viewport(), Qt::LeftButton, Qt::NoModifier,
                      problems->visualItemRect(row).center());
    QCOMPARE(scene->selectedNodes(), std::vector<int>{win.index("pool2")});
    QCOMPARE(win.w.properties()->node(), win.index("pool2"));
    QVERIFY(scene->nodeItem(win.index("pool2"))->hasProblems());
    // Compile refuses and says why; the plan stays as it was, marked out of date.
    QString error;
    QVERIFY(!win.w.compile(&error));
    QVERIFY(error.contains("Compile failed"));
    QVERIFY(win.w.memoryView()->isStale());
    win.doc()->undoStack()->undo();
    QCOMPARE(problems->problemCount(), 0);
    QVERIFY(win.w.compile(&error));
    QVERIFY(!win.w.memoryView()->isStale());
  }

  void saveAndReloadLosesNothing() {
    Window win;
    QTemporaryDir dir;
    // Edits of every kind: a move, a parameter, a new layer, a device set.
    ModelEditor* e = win.w.editor();
    e->moveNodes(e->nextDragSerial(), {{1, 0, 90}}, {{1, 40, 100}});
    LayerNode conv = win.doc()->project().model.nodes[1];
    conv.params.out_channels = 8;
    QVERIFY(e->editNode(1, conv, QStringLiteral("params.out_channels")));
    e->addLayer(LayerType::Dropout, {300, 300});
    DeviceSet two;
    std::string err;
    QVERIFY(parse_device_set("cpu:2", two, err));
    QVERIFY(e->setDevices(two));
    QVERIFY(win.doc()->isModified());
    QVERIFY(win.w.isWindowModified());

    const QString path = dir.filePath("edited.json");
    QString error;
    QVERIFY2(win.w.saveProjectAs(path, &error), qPrintable(error));
    QVERIFY(!win.doc()->isModified());
    QCOMPARE(win.doc()->filePath(), QFileInfo(path).absoluteFilePath());
    const QString saved = json_of(win.doc()->project());

    Window again;
    QVERIFY(again.w.openProject(path, &error));
    QCOMPARE(json_of(again.doc()->project()), saved);
    const LayerNode& n = again.doc()->project().model.nodes[1];
    QCOMPARE(QPointF(n.x, n.y), QPointF(40, 100));
    QCOMPARE(n.params.out_channels, int64_t{8});
    QCOMPARE(again.doc()->project().training.devices.str(), std::string("cpu:2"));
    QCOMPARE(again.w.deviceSelector()->currentDevices().str(), std::string("cpu:2"));
    QVERIFY(again.doc()->nodeIndex("dropout1") >= 0);

    // Saving into a folder that does not exist: refused, the document stays modified.
    again.w.editor()->arrange();
    QVERIFY(!again.w.saveProjectAs(dir.filePath("no/such/dir.json"), &error));
    QVERIFY(error.contains("no/such/dir.json"));
    QVERIFY(again.doc()->isModified());
  }

  void badFilesAreRefusedAndNothingIsLost() {
    Window win;
    win.w.editor()->addLayer(LayerType::ReLU, {400, 0});
    const QString before = json_of(win.doc()->project());
    QTemporaryDir dir;
    const QString bad = dir.filePath("broken.json");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(
        "{\"format\": 1, \"name\": \"x\",\n \"model\": {\"nodes\": [\n  {\"id\": \"a\", \"type\": "
        "\"Conv3d\"}]}}\n");
    f.close();
    QString error;
    QVERIFY(!win.w.openProject(bad, &error));
    QVERIFY2(error.contains("broken.json") && error.contains("Conv3d"), qPrintable(error));
    QVERIFY(!win.w.openProject(dir.filePath("absent.json"), &error));
    QVERIFY(error.contains("absent.json"));
    QCOMPARE(json_of(win.doc()->project()), before);
    QVERIFY(win.doc()->isModified());
    QVERIFY(win.w.windowTitle().startsWith("lenet-fashion.json"));
  }

  void devicesAreAnUndoableProjectEdit() {
    Window win;
    QComboBox* devices = win.w.deviceSelector();
    devices->setCurrentIndex(devices->findData(QStringLiteral("cpu:2")));
    QCOMPARE(win.doc()->project().training.devices.str(), std::string("cpu:2"));
    QCOMPARE(win.doc()->analysisBatch(), int64_t{64});
    QVERIFY(win.w.memoryView()->isStale());
    QVERIFY(win.w.compile());
    QCOMPARE(win.w.memoryView()->arenaTable()->topLevelItemCount(), 2);
    win.doc()->undoStack()->undo();
    QCOMPARE(win.doc()->project().training.devices.str(), std::string("cpu:1"));
    QCOMPARE(devices->currentData().toString(), QStringLiteral("cpu:1"));
  }

  void keyboardShortcuts() {
    Window win;
    QApplication::setActiveWindow(&win.w);
    QVERIFY(QTest::qWaitForWindowActive(&win.w));
    DesignerView* view = win.w.designer();
    view->setFocus();
    view->designerScene()->selectNodes({win.index("relu3")});
    QTest::keyClick(view->viewport(), Qt::Key_Delete);
    QCOMPARE(win.index("relu3"), -1);
    QTest::keyClick(view->viewport(), Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(win.index("relu3") >= 0);
    // Delete in a text field edits the text, not the design.
    view->designerScene()->selectNodes({win.index("relu3")});
    auto* id = qobject_cast<QLineEdit*>(win.w.properties()->fieldEditor("id"));
    QVERIFY(id);
    id->setFocus();
    id->setCursorPosition(0);
    QTest::keyClick(id, Qt::Key_Delete);
    QCOMPARE(id->text(), QStringLiteral("elu3"));
    QVERIFY(win.index("relu3") >= 0);
    QTest::keyClick(&win.w, Qt::Key_F5);
    QCOMPARE(win.w.currentView(), MainWindow::View::Memory);
    // Save As has keys on every desktop, Qt's generic one included.
    QVERIFY(!win.w.action(QStringLiteral("saveAs"))->shortcuts().isEmpty());
  }

  void compileActionShowsTheMemoryView() {
    Window win;
    win.w.showView(MainWindow::View::Design);
    win.w.action("compile")->trigger();
    QCOMPARE(win.w.currentView(), MainWindow::View::Memory);
    QVERIFY(win.w.memoryView()->summaryText().contains("per device"));
  }

  void templatesOpenAndCompile_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<qlonglong>("params");
    QTest::newRow("lenet") << "lenet-fashion" << 61706LL;
    QTest::newRow("bn-cnn") << "cnn-bn-fashion" << 65834LL;
    QTest::newRow("resnet8") << "resnet8-fashion" << 77754LL;
    QTest::newRow("resnet20") << "resnet20" << 272474LL;
    QTest::newRow("resnet20-cifar10") << "resnet20-cifar10" << 272474LL;
    QTest::newRow("vgg") << "vgg-fashion" << 467818LL;
  }

  void templatesOpenAndCompile() {
    QFETCH(QString, key);
    QFETCH(qlonglong, params);
    Window win;
    QString error;
    QVERIFY2(win.w.newFromTemplate(key, &error), qPrintable(error));
    QVERIFY(win.doc()->filePath().isEmpty());  // a template is a new, unsaved project
    QVERIFY(win.doc()->analysis().ok());
    QCOMPARE(static_cast<qlonglong>(win.doc()->analysis().total_params), params);
    QVERIFY(win.w.memoryView()->compiled());
    QVERIFY(!win.w.newFromTemplate(QStringLiteral("nope"), &error));
    QVERIFY(error.contains("nope"));
  }

  // File > Export ONNX, without its dialogs: the open design with a
  // checkpoint's weights; a checkpoint of another project is refused.
  void exportOnnxWritesTheDesignWithACheckpoint() {
    Window win;
    QAction* a = win.w.action(QStringLiteral("exportOnnx"));
    QVERIFY(a && a->isEnabled());
    QTemporaryDir dir;
    QProcess train;
    train.start(QStringLiteral(TR_CLI),
                {"train", MainWindow::defaultProjectPath(), "--max-steps", "2", "--no-store",
                 "--no-validation", "--checkpoint-dir", dir.path()});
    QVERIFY(train.waitForFinished(120000) && train.exitCode() == 0);
    const QString ckpt = dir.filePath(QStringLiteral("lenet-fashion-step2.ckpt"));
    const QString out = dir.filePath(QStringLiteral("lenet.onnx"));
    QString message;
    QVERIFY2(export_onnx_file(win.doc()->project(), ckpt, out, &message), qPrintable(message));
    QVERIFY2(message.startsWith(QStringLiteral("Exported ") + out), qPrintable(message));
    QVERIFY(message.contains(QStringLiteral("61706 parameters")));
    QVERIFY(QFileInfo(out).size() > 61706 * 4);
    QString error;
    QVERIFY(win.w.newFromTemplate(QStringLiteral("cnn-bn-fashion"), &error));
    QVERIFY(!export_onnx_file(win.doc()->project(), ckpt, dir.filePath("other.onnx"), &message));
    QVERIFY2(message.contains(QStringLiteral("is a checkpoint of 'lenet-fashion', not of the open "
                                             "project 'cnn-bn-fashion'")),
             qPrintable(message));
    QVERIFY(!QFile::exists(dir.filePath("other.onnx")));
    // The exported model goes beside the project, not beside its weights
    // (a run's are in the data folder); a sample's, where Save As would put it.
    QCOMPARE(win.w.workFolder(), win.w.saveFolder());
    QVERIFY(win.w.saveProjectAs(dir.filePath("mine.json"), &error));
    QCOMPARE(win.w.workFolder(), dir.path());
    QVERIFY(!export_onnx_file(win.doc()->project(), dir.filePath("absent.ckpt"), out, &message));
    QVERIFY2(message.contains(QStringLiteral("absent.ckpt")), qPrintable(message));
  }

  // File > Import ONNX, without its dialogs: a model exported from a
  // trained project becomes a project file and a checkpoint, which opens as
  // the same design; a file that is no model is refused, nothing written.
  void importOnnxOpensTheModelAsAProject() {
    Window win;
    QVERIFY(win.w.action(QStringLiteral("importOnnx")));
    QTemporaryDir dir;
    QProcess cli;
    cli.start(QStringLiteral(TR_CLI),
              {"train", MainWindow::defaultProjectPath(), "--max-steps", "2", "--no-store",
               "--no-validation", "--checkpoint-dir", dir.path()});
    QVERIFY(cli.waitForFinished(120000) && cli.exitCode() == 0);
    const QString onnx = dir.filePath(QStringLiteral("lenet.onnx"));
    cli.start(QStringLiteral(TR_CLI),
              {"onnx", "export", MainWindow::defaultProjectPath(), "--checkpoint",
               dir.filePath("lenet-fashion-step2.ckpt"), "-o", onnx});
    QVERIFY(cli.waitForFinished(60000) && cli.exitCode() == 0);
    // Proposed beside the model, named after it, never over a file there.
    QCOMPARE(import_project_path(onnx), dir.filePath(QStringLiteral("lenet.json")));
    QFile(dir.filePath(QStringLiteral("lenet.json"))).open(QIODevice::WriteOnly);
    QCOMPARE(import_project_path(onnx), dir.filePath(QStringLiteral("lenet-imported.json")));
    QFile(dir.filePath(QStringLiteral("lenet-imported.ckpt"))).open(QIODevice::WriteOnly);
    QCOMPARE(import_project_path(onnx), dir.filePath(QStringLiteral("lenet-imported-2.json")));
    ImportedModel m;
    QString message;
    const QString project = dir.filePath(QStringLiteral("imported.json"));
    QVERIFY2(import_onnx_file(onnx, project, &m, &message), qPrintable(message));
    QCOMPARE(m.checkpoint, dir.filePath(QStringLiteral("imported.ckpt")));
    QVERIFY(QFileInfo(m.checkpoint).size() > 61706 * 4);
    QVERIFY2(m.summary.contains(QStringLiteral("61706 weights")), qPrintable(m.summary));
    QVERIFY2(m.notes.join(' ').contains(QStringLiteral("Fashion-MNIST")),
             qPrintable(m.notes.join(' ')));
    QString error;
    QVERIFY2(win.w.openProject(project, &error), qPrintable(error));
    QCOMPARE(win.doc()->project().name, std::string("imported"));
    QVERIFY(win.doc()->analysis().ok());
    QCOMPARE(static_cast<qlonglong>(win.doc()->analysis().total_params), qlonglong{61706});
    // Laid out once on opening: the file has no positions.
    for (const LayerNode& n : win.doc()->project().model.nodes) QVERIFY(n.has_position);

    const QString text = dir.filePath(QStringLiteral("notes.onnx"));
    QFile f(text);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a model");
    f.close();
    QVERIFY(!import_onnx_file(text, dir.filePath(QStringLiteral("no.json")), &m, &message));
    QVERIFY2(message.contains(QStringLiteral("not an ONNX model")), qPrintable(message));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("no.json"))));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("no.ckpt"))));
  }

  // A message shown while the window is narrow (as while it is laid out on
  // opening) shows whole once the window is wide enough.
  void aStatusMessageShowsWholeOnceThereIsRoom() {
    Window win;
    const int narrow = win.w.minimumSizeHint().width();
    win.w.resize(narrow, 700);
    QTRY_COMPARE(win.w.statusBar()->width(), narrow);
    // A message 100 px longer than the room it has now.
    QStatusBar* bar = win.w.statusBar();
    QString text = QStringLiteral("Compiled: 1.19 MiB per device, 3 variants");
    int counter = 0;
    for (const QLabel* l : bar->findChildren<QLabel*>())
      if (l->text().contains(QStringLiteral(" parameters · "))) counter = l->width();
    QVERIFY(counter > 0);
    const int room = narrow - counter - 32;
    while (bar->fontMetrics().horizontalAdvance(text) < room + 100) text += QStringLiteral(" x");
    emit win.w.trainingView()->status(text);
    QVERIFY(bar->currentMessage() != text);
    win.w.resize(narrow + 400, 700);
    QTRY_COMPARE(bar->currentMessage(), text);
  }

  // An image-folder project whose folders are not chosen yet (an imported
  // model's) compiles: its plan does not depend on how many images there
  // are. Training waits for the folder, and the status bar counts what the
  // Problems panel lists.
  void anImageFolderProjectWithoutFoldersCompiles() {
    Window win;
    Project p = load_project(MainWindow::defaultProjectPath().toStdString());
    p.dataset.kind = DatasetKind::ImageFolder;
    p.dataset.path.clear();
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("folders.json"));
    save_project(p, path.toStdString());
    QString error;
    QVERIFY2(win.w.openProject(path, &error), qPrintable(error));
    QVERIFY2(win.w.compile(&error), qPrintable(error));
    QTRY_VERIFY(win.w.problems()->blockingCount() == 1);
    QCOMPARE(win.w.problems()->fieldKey(0), QStringLiteral("dataset.train_dir"));
    const QLabel* summary = nullptr;
    for (const QLabel* l : win.w.statusBar()->findChildren<QLabel*>())
      if (l->text().contains(QStringLiteral(" parameters · "))) summary = l;
    QVERIFY(summary);
    QVERIFY2(summary->text().endsWith(QStringLiteral("· 1 problem")), qPrintable(summary->text()));
  }

  // Run > Try the Model, without its file dialogs: a labelled folder is
  // classified with the accuracy, misclassified images first; an unreadable
  // file is listed; without a checkpoint it says what to choose.
  void tryTheModelClassifiesImages() {
    Window win;
    QVERIFY(win.w.action(QStringLiteral("tryModel")));
    QTemporaryDir dir;
    QProcess train;
    train.start(QStringLiteral(TR_CLI),
                {"train", MainWindow::defaultProjectPath(), "--max-steps", "30", "--no-store",
                 "--no-validation", "--checkpoint-dir", dir.path()});
    QVERIFY(train.waitForFinished(120000) && train.exitCode() == 0);
    // Each image in ten class folders, one for each class: exactly one
    // label is right. T-shirt/top's folder spells it as a folder can.
    const char* classes[] = {"t-shirt-top", "Trouser", "Pullover", "Dress", "Coat",
                             "Sandal",      "Shirt",   "Sneaker",  "Bag",   "ankle-boot"};
    for (const char* cls : classes) {
      QDir(dir.path()).mkpath(QStringLiteral("labelled/%1").arg(cls));
      for (int i = 0; i < 4; ++i) {
        QImage img(28, 28, QImage::Format_Grayscale8);
        for (int y = 0; y < 28; ++y)
          for (int x = 0; x < 28; ++x)
            img.setPixel(x, y, qRgb(0, 0, 0) | (((x * (i + 1) + y * (3 - i)) % 256) * 0x010101));
        QVERIFY(img.save(dir.filePath(QStringLiteral("labelled/%1/%2.png").arg(cls).arg(i))));
      }
    }
    TryModelDialog d(win.doc()->project(), ModelWeights{});
    QString error;
    QVERIFY(!d.classifyFolder(dir.filePath("labelled"), &error));
    QVERIFY2(error.contains("choose the checkpoint"), qPrintable(error));
    d.setCheckpoint(dir.filePath("lenet-fashion-step30.ckpt"));
    QVERIFY2(d.classifyFolder(dir.filePath("labelled"), &error), qPrintable(error));
    QCOMPARE(d.table()->rowCount(), 40);
    QVERIFY2(d.summary().contains("40 images classified; accuracy "), qPrintable(d.summary()));
    int right = 0, wrong = 0;
    for (int r = 0; r < 40; ++r) {
      const bool ok = d.table()->item(r, 2)->text().startsWith(d.table()->item(r, 3)->text() + " ");
      QVERIFY2(!(right > 0 && !ok), "a misclassified image after a correct one");
      (ok ? right : wrong) += 1;
    }
    QVERIFY2(right > 0 && wrong > 0,
             qPrintable(QStringLiteral("%1 right, %2 wrong").arg(right).arg(wrong)));
    QVERIFY(d.summary().contains(QStringLiteral("(%1 of 40)").arg(right)));
    std::ofstream(dir.filePath("broken.png").toStdString()) << "no";
    QVERIFY(d.classifyFiles({dir.filePath("labelled/Bag/0.png"), dir.filePath("broken.png")}));
    QVERIFY2(d.summary().contains("1 image classified; 1 unreadable"), qPrintable(d.summary()));
    QVERIFY(d.table()->item(0, 2)->text().startsWith("unreadable: "));
    // Images… and Folder… start in Pictures (or home), never in the folder
    // the workbench was started from; for an image-folder project, in its
    // validation folder.
    QSettings().remove(QStringLiteral("predict/imagesFolder"));
    QVERIFY(d.imagesFolder() != QDir::currentPath());
    QVERIFY(QFileInfo(d.imagesFolder()).isDir());
    Project folders = win.doc()->project();
    folders.dataset.kind = DatasetKind::ImageFolder;
    folders.dataset.val_path = dir.filePath("labelled").toStdString();
    QCOMPARE(TryModelDialog(folders, ModelWeights{}).imagesFolder(), dir.filePath("labelled"));
  }

  void newProjectIsEmptyAndSaysWhatIsMissing() {
    Window win;
    win.w.newProject();
    QVERIFY(win.doc()->project().model.nodes.empty());
    QVERIFY(!win.w.memoryView()->compiled());
    QVERIFY(win.w.problems()->problemCount() >= 2);  // no Input, no loss
  }

  void windowLayoutIsRemembered() {
    {
      Window win;
      QDockWidget* problems = win.w.findChild<QDockWidget*>(QStringLiteral("problemsDock"));
      QVERIFY(problems && problems->isVisible());
      problems->hide();
      win.w.resize(1271, 777);  // fits a 1280-pixel screen
      QVERIFY(win.w.close());
    }
    MainWindow again;
    again.show();
    QDockWidget* problems = again.findChild<QDockWidget*>(QStringLiteral("problemsDock"));
    QVERIFY(!problems->isVisible());
    QCOMPARE(again.size(), QSize(1271, 777));
    problems->show();
    QVERIFY(again.close());
  }

  void designTrainStopAndFindTheRun() {
    Window win;
    win.w.newProject();
    DesignerView* view = win.w.designer();
    view->resetZoom();
    view->centerOn(400, 300);
    const CanvasDriver canvas{view, win.w.palette(), win.doc()};
    double y = 40;
    for (LayerType t : {LayerType::Input, LayerType::Conv2d, LayerType::ReLU, LayerType::Flatten,
                        LayerType::Linear, LayerType::SoftmaxCrossEntropy}) {
      QVERIFY(canvas.drop(t, QPointF(300, y)) >= 0);
      y += 110;
    }
    canvas.connectByMouse("input1", "conv1");
    canvas.connectByMouse("conv1", "relu1");
    canvas.connectByMouse("relu1", "flatten1");
    canvas.connectByMouse("flatten1", "fc1");
    canvas.connectByMouse("fc1", "loss1");
    QVERIFY(win.doc()->analysis().ok());
    QCOMPARE(win.doc()->project().model.edges.size(), size_t{5});

    // Undo all of it, redo all of it.
    const QString built = json_of(win.doc()->project());
    while (win.doc()->undoStack()->canUndo()) {
      QVERIFY(win.w.action("undo")->isEnabled());
      win.w.action("undo")->trigger();
    }
    QVERIFY(win.doc()->project().model.nodes.empty());
    while (win.doc()->undoStack()->canRedo()) win.w.action("redo")->trigger();
    QCOMPARE(json_of(win.doc()->project()), built);

    // Save (the untitled project takes the file's name) and reload.
    QTemporaryDir dir;
    const QString path = dir.filePath("built.json");
    QString error;
    QVERIFY2(win.w.saveProjectAs(path, &error), qPrintable(error));
    QCOMPARE(win.doc()->project().name, std::string("built"));
    const QString saved = json_of(win.doc()->project());
    QVERIFY2(win.w.openProject(path, &error), qPrintable(error));
    QCOMPARE(json_of(win.doc()->project()), saved);

    // Compile (done on opening; again by the action).
    win.w.action("compile")->trigger();
    QCOMPARE(win.w.currentView(), MainWindow::View::Memory);
    QVERIFY(win.w.memoryView()->compiled());

    // Train from the toolbar; the loss plot fills; stop within a step.
    TrainingView* training = win.w.trainingView();
    QSignalSpy ended(training, &TrainingView::runEnded);
    QSignalSpy profiled(training, &TrainingView::profileReady);
    win.w.action("train")->trigger();
    QCOMPARE(win.w.currentView(), MainWindow::View::Training);
    QVERIFY(training->isRunning());
    QVERIFY(!win.w.action("train")->isEnabled());
    QTRY_VERIFY2_WITH_TIMEOUT(training->lossPlot()->pointCount(0) >= 5,
                              qPrintable(training->statusText() + " / " + training->errorText()),
                              60000);
    QVERIFY(win.w.action("stop")->isEnabled());
    win.w.action("stop")->trigger();
    QTRY_VERIFY_WITH_TIMEOUT(!training->isRunning(), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
    const qint64 run = ended.front().front().toLongLong();
    QVERIFY(run > 0);
    QVERIFY(win.w.action("train")->isEnabled());
    const size_t points = training->lossPlot()->pointCount(0);
    QCOMPARE(static_cast<qint64>(points), training->stepsDone());

    // The run is in the store as stopped, with every step the plot showed,
    // and the runs view lists and selects it.
    {
      store::RunStore store(store::resolve_store_path());
      const store::RunDetail d = store.run(run);
      QCOMPARE(d.summary.status, store::RunStatus::Stopped);
      QCOMPARE(store.step_curve(run).size(), points);
    }
    RunsView* runs = win.w.runsView();
    win.w.showView(MainWindow::View::Runs);
    QTRY_COMPARE(runs->selectedRuns(), QList<qint64>{run});
    QVERIFY(runs->runsModel()->rowCount() >= 1);

    // Linked views: the profile reached the timeline; selecting conv1 in the
    // designer marks its tensors in the memory map and its ops in the timeline.
    QTRY_VERIFY(profiled.count() == 1);
    TimelineView* timeline = win.w.timelineView();
    QVERIFY(timeline->hasProfile());
    const int conv1 = win.doc()->nodeIndex("conv1");
    win.w.designer()->focusNode(QStringLiteral("conv1"));
    QCOMPARE(win.w.memoryView()->highlightedLayers(), QList<int>{conv1});
    QVERIFY(!win.w.memoryView()->bands()->highlightedTensors().empty());
    QCOMPARE(timeline->highlightedLayers(), QList<int>{conv1});
    // Clicking a timeline bar of fc1 selects fc1 in the designer.
    const int fc1 = win.doc()->nodeIndex("fc1");
    win.w.showView(MainWindow::View::Timeline);
    TimelineCanvas* c = timeline->canvas();
    int bar = -1;
    for (size_t i = 0; i < timeline->model().bars().size(); ++i)
      if (timeline->model().bars()[i].layer == fc1) bar = static_cast<int>(i);
    QVERIFY(bar >= 0);
    const TimelineBar& b = timeline->model().bars()[static_cast<size_t>(bar)];
    const double span = std::max(b.end_us - b.start_us, 0.05) * c->plotRect().width() / 100;
    c->setVisibleRange((b.start_us + b.end_us - span) / 2, (b.start_us + b.end_us + span) / 2);
    QTest::mouseClick(c, Qt::LeftButton, {}, c->barRect(bar).center().toPoint());
    QCOMPARE(win.w.currentView(), MainWindow::View::Design);
    QCOMPARE(win.w.designer()->designerScene()->currentNode(), fc1);
    // A region band names the nodes owning its tensors; its link selects one.
    MemoryView* memory = win.w.memoryView();
    memory->showRegion(region_index(Region::W_FC_WEIGHT));
    QVERIFY2(memory->ownersText().contains("fc1"), qPrintable(memory->ownersText()));
    QCOMPARE(memory->regionOwners(region_index(Region::W_FC_WEIGHT)), QList<int>{fc1});
  }

  // A MultiHeadSelfAttention is one node in the designer and its three parts
  // in the plan: selecting the node marks all three in the memory map, and
  // asking for any part's layer selects the node.
  void aCompositeLayerLinksToItsParts() {
    Window win;
    QString error;
    QVERIFY2(win.w.openProject(QStringLiteral(TR_PROJECTS_DIR "/vit-tiny-fashion.json"), &error),
             qPrintable(error));
    win.w.showView(MainWindow::View::Memory);
    MemoryView* memory = win.w.memoryView();
    QVERIFY(memory->compiled());
    QList<int> parts;
    for (const char* id : {"b2_attn.in_proj", "b2_attn.attention", "b2_attn.out_proj"})
      parts << memory->compiled()->project().model.find(id);
    QVERIFY(!parts.contains(-1));
    QCOMPARE(win.index("b2_attn.attention"), -1);
    win.w.designer()->focusNode(QStringLiteral("b2_attn"));
    QCOMPARE(memory->highlightedLayers(), parts);
    QVERIFY(!memory->bands()->highlightedTensors().empty());

    // A layer selected while the plan is out of date is marked once it is
    // compiled again.
    LayerNode changed = win.doc()->project().model.nodes[static_cast<size_t>(win.index("b2_attn"))];
    changed.params.attention_dropout = 0.1;
    QVERIFY(win.w.editor()->editNode(win.index("b2_attn"), changed, QStringLiteral("dropout")));
    QVERIFY(memory->isStale());
    win.w.designer()->focusNode(QStringLiteral("b1_ln1"));
    QVERIFY(memory->highlightedLayers().isEmpty());
    QVERIFY(win.w.compile());
    QVERIFY(!memory->isStale());
    QCOMPARE(memory->highlightedLayers(),
             QList<int>{memory->compiled()->project().model.find("b1_ln1")});
    const auto& layers = memory->compiled()->project().model.nodes;
    QCOMPARE(layers[static_cast<size_t>(parts[1])].design_id(), std::string("b2_attn"));
    emit memory->layerRequested(parts[1]);
    QCOMPARE(win.w.currentView(), MainWindow::View::Design);
    QCOMPARE(win.w.designer()->designerScene()->currentNode(), win.index("b2_attn"));
  }

  void screenshotsOfEveryView() {
    Window win;
    QTemporaryDir dir;
    QString error;
    const QString out = dir.filePath("shots/nested");
    QVERIFY2(win.w.writeScreenshots(out, &error, 12), qPrintable(error));
    // It trained first (briefly, profiled), so every view has content.
    QVERIFY(win.w.trainingView()->lastRunId() > 0);
    QVERIFY(win.w.timelineView()->hasProfile());
    for (const char* name :
         {"designer.png", "memory.png", "timeline.png", "training.png", "runs.png"}) {
      QImage image(QDir(out).filePath(QLatin1String(name)));
      QVERIFY2(!image.isNull(), name);
      QCOMPARE(image.size(), win.w.size() * win.w.devicePixelRatio());
      // Not a blank image: many colours.
      QSet<QRgb> colours;
      for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
      QVERIFY2(colours.size() > 20, name);
    }
    QFile file(dir.filePath("plain-file"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.close();
    QVERIFY(!win.w.writeScreenshots(file.fileName(), &error));
    QVERIFY(error.contains("not a folder"));
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Journeys through the whole workbench as a user makes them, by keys,
// clicks and the real dialogs: every view visited, then New and Open,
// again and again (the sequence that once read a freed memory plan); every
// shipped project opened from every view; Pause and Resume from the toolbar
// and F8 while a run trains; a plan that does not fit, a batch larger than
// the dataset and a missing dataset folder listed as problems that block
// Train, and fixed from the panel the problem points at; a project's
// identity: samples that are never overwritten, names that follow the file,
// recent files, the last session restored, the Help menu.
#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QGraphicsView>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QStatusBar>
#include <QStyle>
#include <QTabBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolBar>
#include <QTreeWidget>
#include <QtTest>

#include <renaissance/dataset_probe.h>

#include <renaissance/project_io.h>
#include "analysis/network_analysis_panel.h"
#include "dataset/sample_grid.h"
#include "designer/designer_scene.h"
#include "designer/designer_view.h"
#include "designer/model_editor.h"
#include "designer/node_item.h"
#include "designer/palette_widget.h"
#include "designer/properties_panel.h"
#include "dialog_driver.h"
#include "main_window.h"
#include "memory/dtensor_table_model.h"
#include "memory/lifetime_chart.h"
#include "memory/memory_view.h"
#include "plot/curve_plot.h"
#include "problems_panel.h"
#include "project_document.h"
#include "readability.h"
#include "runs/runs_view.h"
#include "settings/set_training_command.h"
#include "settings/training_settings_panel.h"
#include "theme.h"
#include "timeline/timeline_view.h"
#include "training/confusion_matrix_view.h"
#include "training/training_charts.h"
#include "training/training_view.h"

using namespace tr;
using namespace tr::gui;

namespace {

// The tab that shows view `v`.
int tab_of(const MainWindow& w, MainWindow::View v) {
  for (const MainWindow::ViewInfo& i : MainWindow::views())
    if (i.view == v) return w.tabs()->indexOf(i.widget(w));
  return -1;
}

// Every view, from the main window's registry.
const std::vector<MainWindow::View> kViews = [] {
  std::vector<MainWindow::View> v;
  for (const MainWindow::ViewInfo& i : MainWindow::views()) v.push_back(i.view);
  return v;
}();

QString project_path(const char* name) {
  return QDir(QStringLiteral(TR_PROJECTS_DIR)).filePath(QLatin1String(name));
}

// The window at the size the README promises every view is readable at.
struct Window {
  MainWindow w;
  // An invalid size: the first start's own (fresh settings).
  explicit Window(QSize size = QSize(1280, 800)) {
    if (size.isValid()) w.resize(size);
    w.show();
    QApplication::setActiveWindow(&w);
    if (!QTest::qWaitForWindowActive(&w)) qWarning("the window did not become active");
  }
  ProjectDocument* doc() { return w.document(); }
  // A click on the view's tab.
  void visit(MainWindow::View v) {
    QTabBar* bar = w.tabs()->tabBar();
    QTest::mouseClick(bar, Qt::LeftButton, {}, bar->tabRect(tab_of(w, v)).center());
    settle();
  }
  // Lets every view lay itself out and paint, as a screen would. A window
  // manager gives the focus back to the window when a dialog closes; the
  // offscreen platform does not, so the test does.
  void settle() {
    QCoreApplication::processEvents();
    if (!w.isActiveWindow()) {
      QApplication::setActiveWindow(&w);
      if (!QTest::qWaitForWindowActive(&w)) qWarning("the window did not become active");
    }
    (void)w.grab();
  }
  QList<int> blockingRows() {
    QList<int> rows;
    for (int i = 0; i < w.problems()->topLevelItemCount(); ++i)
      if (w.problems()->isBlocking(i)) rows << i;
    return rows;
  }
  QTreeWidgetItem* problemAbout(const QString& field, const QString& words) {
    ProblemsPanel* p = w.problems();
    for (int i = 0; i < p->topLevelItemCount(); ++i) {
      QTreeWidgetItem* item = p->topLevelItem(i);
      if (p->fieldKey(i) == field && item->text(3).contains(words)) return item;
    }
    return nullptr;
  }
  QString problemsText() {
    QStringList lines;
    ProblemsPanel* p = w.problems();
    for (int i = 0; i < p->topLevelItemCount(); ++i)
      lines << p->fieldKey(i) + ": " + p->topLevelItem(i)->text(3);
    return lines.join('\n');
  }
};

// Types `text` over a spin box's value and presses Enter, as a user edits it.
void type_into(QAbstractSpinBox* box, const QString& text) {
  box->setFocus();
  box->selectAll();
  QTest::keyClicks(box, text);
  QTest::keyClick(box, Qt::Key_Return);
}

}  // namespace

class TestJourneys : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("RenaissanceTests"));
    QCoreApplication::setApplicationName(QStringLiteral("Journeys"));
    QSettings().clear();
  }

  void everyViewThenNewAndOpenRepeatedly() {
    Window win;
    const QString lenet = project_path("lenet-fashion.json");
    const QString resnet8 = project_path("resnet8-fashion.json");
    for (int round = 0; round < 3; ++round) {
      for (MainWindow::View v : kViews) {
        win.visit(v);
        QCOMPARE(win.w.currentView(), v);
        // Every view once more, the way a user looks around before leaving.
        for (MainWindow::View other : kViews) win.visit(other);
        win.visit(v);

        QTest::keyClick(&win.w, Qt::Key_N, Qt::ControlModifier);
        win.settle();
        QVERIFY(win.doc()->project().model.nodes.empty());
        QVERIFY(!win.w.memoryView()->compiled());
        QCOMPARE(win.w.memoryView()->tensorModel()->rowCount(), 0);
        QCOMPARE(win.w.currentView(), v);

        const QString path = (round + tab_of(win.w, v)) % 2 ? resnet8 : lenet;
        {
          DialogDriver open = DialogDriver::choosePath(path);
          QTest::keyClick(&win.w, Qt::Key_O, Qt::ControlModifier);
          QTRY_VERIFY(open.answered());
          win.settle();
          QCOMPARE(open.dialogClass(), QStringLiteral("QFileDialog"));
        }
        win.settle();
        // A shipped sample opens as a template: no file of its own.
        QCOMPARE(win.doc()->samplePath(), QFileInfo(path).absoluteFilePath());
        QVERIFY(win.doc()->filePath().isEmpty());
        QVERIFY(win.w.memoryView()->compiled());
        QVERIFY(win.w.memoryView()->tensorModel()->rowCount() > 0);
        for (MainWindow::View other : kViews) win.visit(other);
      }
    }
  }

  void everyShippedProjectFromEveryView() {
    Window win;
    const QStringList projects =
        QDir(QStringLiteral(TR_PROJECTS_DIR)).entryList({QStringLiteral("*.json")}, QDir::Files);
    QVERIFY(projects.size() >= 5);
    for (MainWindow::View v : kViews) {
      for (const QString& name : projects) {
        win.visit(v);
        QString error;
        QVERIFY2(win.w.openProject(QDir(QStringLiteral(TR_PROJECTS_DIR)).filePath(name), &error),
                 qPrintable(name + ": " + error));
        win.settle();
        QVERIFY2(win.w.memoryView()->compiled(), qPrintable(name));
        const CompiledPlan* cp = win.w.memoryView()->compiled();
        // The table lists the new plan's tensors, never the old one's.
        QCOMPARE(static_cast<size_t>(win.w.memoryView()->tensorModel()->rowCount()),
                 cp->plans().front().dtensors().size());
        win.visit(MainWindow::View::Memory);
        win.visit(v);
      }
    }
  }

  void pauseAndResumeFromTheToolbarWhileTraining() {
    Window win;
    QString error;
    QVERIFY2(win.w.openProject(project_path("lenet-fashion.json"), &error), qPrintable(error));
    QAction* pause = win.w.action("pause");
    QAction* stop = win.w.action("stop");
    QVERIFY(!pause->isEnabled());
    TrainingView* training = win.w.trainingView();
    QTest::keyClick(&win.w, Qt::Key_R, Qt::ControlModifier);
    QVERIFY2(training->isRunning(), qPrintable(training->errorText()));
    // Reachable at once, while the run prepares, and once it trains.
    QVERIFY(pause->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(training->stepsDone() >= 2, 60000);
    QCOMPARE(training->state(), TrainingController::State::Running);
    QVERIFY(pause->isEnabled());
    QVERIFY(stop->isEnabled());
    QTest::keyClick(&win.w, Qt::Key_F8);
    QCOMPARE(training->state(), TrainingController::State::Paused);
    QCOMPARE(pause->text(), QStringLiteral("&Resume"));
    QTRY_VERIFY_WITH_TIMEOUT(training->statusText().startsWith("Paused after step"), 30000);
    const qint64 held = training->stepsDone();
    QTest::qWait(300);
    QCOMPARE(training->stepsDone(), held);
    QTest::qWait(1200);                   // a pause the throughput must not count as training time
    QTest::keyClick(&win.w, Qt::Key_F8);  // resume
    QCOMPARE(training->state(), TrainingController::State::Running);
    QCOMPARE(pause->text(), QStringLiteral("&Pause"));
    QTRY_VERIFY_WITH_TIMEOUT(training->stepsDone() > held, 30000);
    // And the toolbar's own button, as a mouse would press it.
    pause->trigger();
    QCOMPARE(training->state(), TrainingController::State::Paused);
    QTest::keyClick(&win.w, Qt::Key_F5, Qt::ShiftModifier);  // stop
    QTRY_VERIFY_WITH_TIMEOUT(!training->isRunning(), 30000);
    QVERIFY(!pause->isEnabled());
    QVERIFY(!stop->isEnabled());
    QVERIFY(training->captionText().contains("stopped"));
    // The pause is not training time: the step trained right after it took
    // far less than the 1.2 s paused (a LeNet step takes milliseconds), so
    // its images/s does not drop towards zero.
    training->charts()->flush();
    const std::vector<double>& ips = training->charts()->throughputPlot()->seriesY(0);
    QVERIFY(ips.size() > static_cast<size_t>(held));
    const double batch = static_cast<double>(win.doc()->project().training.global_batch);
    QVERIFY2(ips[static_cast<size_t>(held)] > batch / 1.0,
             qPrintable(QStringLiteral("%1 images/s right after the pause")
                            .arg(ips[static_cast<size_t>(held)])));
  }

  void aPlanThatDoesNotFitBlocksTrain() {
    Window win;
    QString error;
    QVERIFY2(win.w.openProject(project_path("lenet-fashion.json"), &error), qPrintable(error));
    QVERIFY(win.w.action("train")->isEnabled());
    QVERIFY(win.blockingRows().isEmpty());
    auto* batch =
        qobject_cast<QSpinBox*>(win.w.settingsPanel()->fieldEditor("training.global_batch"));
    QVERIFY(batch);
    type_into(batch, QStringLiteral("10000000"));
    QCOMPARE(win.doc()->project().training.global_batch, int64_t{10000000});
    // Listed shortly after the edit, without compiling by hand.
    QTRY_VERIFY2(win.problemAbout("training.global_batch", "Does NOT fit"),
                 qPrintable(win.problemsText()));
    QTreeWidgetItem* fit = win.problemAbout("training.global_batch", "Does NOT fit");
    QVERIFY2(fit->text(3).contains("host memory available") &&
                 fit->text(3).contains("lower the global batch (the largest that fits is "),
             qPrintable(fit->text(3)));
    QVERIFY(win.problemAbout("training.global_batch", "60000 training images"));
    QVERIFY(win.blockingRows().size() >= 2);
    QVERIFY(!win.w.action("train")->isEnabled());
    QVERIFY(!win.w.trainingView()->trainButton()->isEnabled());
    QVERIFY(!win.w.train(&error));
    QVERIFY2(error.contains("block training"), qPrintable(error));
    QVERIFY(!win.w.trainingView()->isRunning());

    // A batch the memory holds but the dataset does not fill: one problem.
    win.doc()->undoStack()->undo();
    type_into(batch, QStringLiteral("60001"));
    win.w.checkReadiness();
    QCOMPARE(win.blockingRows().size(), 1);
    QVERIFY(win.problemAbout("training.global_batch", "at most 60000"));
    QVERIFY(!win.w.action("train")->isEnabled());
    // Clicking the problem shows the setting to change.
    ProblemsPanel* problems = win.w.problems();
    QTreeWidgetItem* row = problems->topLevelItem(win.blockingRows().front());
    QTest::mouseClick(problems->viewport(), Qt::LeftButton, {},
                      problems->visualItemRect(row).center());
    QVERIFY(win.w.findChild<QDockWidget*>("settingsDock")->isVisible());
    QCOMPARE(QApplication::focusWidget(), batch);
    win.doc()->undoStack()->undo();
    win.w.checkReadiness();
    QVERIFY(win.blockingRows().isEmpty());
    QVERIFY(win.w.action("train")->isEnabled());
  }

  void aMissingDatasetFolderIsAProblemFixedInTheSettings() {
    QTemporaryDir dir;
    Project p = load_project(project_path("lenet-fashion.json").toStdString());
    p.dataset.path = dir.filePath("no-such-folder").toStdString();
    const QString path = dir.filePath("moved-data.json");
    save_project(p, path.toStdString());

    Window win;
    QString error;
    QVERIFY2(win.w.openProject(path, &error), qPrintable(error));
    // On opening, before any training.
    QTreeWidgetItem* missing = win.problemAbout("dataset.path", "does not exist");
    QVERIFY2(missing, qPrintable(win.problemsText()));
    QVERIFY(missing->text(3).contains("no-such-folder"));
    QVERIFY(!win.w.action("train")->isEnabled());
    TrainingSettingsPanel* settings = win.w.settingsPanel();
    QVERIFY(settings->fieldMessage("dataset.path").contains("does not exist"));

    // The problem leads to the folder field; Browse picks the real folder.
    ProblemsPanel* problems = win.w.problems();
    QTest::mouseClick(problems->viewport(), Qt::LeftButton, {},
                      problems->visualItemRect(missing).center());
    auto* folder = qobject_cast<QLineEdit*>(settings->fieldEditor("dataset.path"));
    QVERIFY(folder);
    QCOMPARE(QApplication::focusWidget(), folder);
    const QString real = QString::fromStdString(probe_dataset(DatasetSpec{}).dir);
    QVERIFY2(QFileInfo(real).isDir(), qPrintable(real + " (the Debian package's data)"));
    auto* browse = settings->findChild<QPushButton*>("dataset.path.browse");
    QVERIFY(browse);
    {
      DialogDriver choose = DialogDriver::choosePath(real);
      QTest::mouseClick(browse, Qt::LeftButton);
      QTRY_VERIFY(choose.answered());
      win.settle();
    }
    QCOMPARE(QString::fromStdString(win.doc()->project().dataset.path), real);
    win.w.checkReadiness();
    QVERIFY2(win.blockingRows().isEmpty(), qPrintable(win.problemsText()));
    QVERIFY(win.w.action("train")->isEnabled());
    QVERIFY(settings->fieldMessage("dataset.path").isEmpty());
    // One undoable edit: undo brings the problem back.
    win.doc()->undoStack()->undo();
    win.w.checkReadiness();
    QVERIFY(win.problemAbout("dataset.path", "does not exist"));

    // Synthetic data needs no folder: its shape fields replace the folder.
    auto* kind = qobject_cast<QComboBox*>(settings->fieldEditor("dataset.kind"));
    QVERIFY(kind);
    kind->setCurrentIndex(kind->findText(QStringLiteral("Synthetic")));
    QCOMPARE(win.doc()->project().dataset.kind, DatasetKind::Synthetic);
    QVERIFY(win.doc()->project().dataset.path.empty());
    QVERIFY(!folder->isVisibleTo(settings));
    QVERIFY(settings->fieldEditor("dataset.train_size")->isVisibleTo(settings));
    win.w.checkReadiness();
    QVERIFY2(win.blockingRows().isEmpty(), qPrintable(win.problemsText()));
  }

  void samplesAreNeverOverwrittenAndNamesFollowTheFile() {
    QTemporaryDir dir;
    const QString sample = project_path("lenet-fashion.json");
    QFile original(sample);
    QVERIFY(original.open(QIODevice::ReadOnly));
    const QByteArray sampleBytes = original.readAll();
    original.close();
    {
      Window win;
      QString error;
      QVERIFY2(win.w.openProject(sample, &error), qPrintable(error));
      QVERIFY(win.doc()->filePath().isEmpty());
      QCOMPARE(win.doc()->samplePath(), QFileInfo(sample).absoluteFilePath());
      QVERIFY2(win.w.windowTitle().startsWith("lenet-fashion.json (sample)"),
               qPrintable(win.w.windowTitle()));
      win.w.editor()->addLayer(LayerType::ReLU, {500, 0});

      // Ctrl+S asks where to save: not in the samples' folder.
      QString startedIn;
      const QString mine = dir.filePath("mynet.json");
      {
        DialogDriver save([&](QWidget* w) {
          auto* d = qobject_cast<QFileDialog*>(w);
          QVERIFY(d);
          startedIn = d->directory().absolutePath();
          auto* name = d->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
          QVERIFY(name);
          name->setText(mine);
          QTest::keyClick(name, Qt::Key_Return);
        });
        QTest::keyClick(&win.w, Qt::Key_S, Qt::ControlModifier);
        QTRY_VERIFY(save.answered());
        win.settle();
      }
      QVERIFY2(QFileInfo(startedIn).canonicalFilePath() !=
                   QFileInfo(MainWindow::samplesFolder()).canonicalFilePath(),
               qPrintable(startedIn));
      QCOMPARE(win.doc()->filePath(), mine);
      QVERIFY(win.doc()->samplePath().isEmpty());
      QCOMPARE(win.doc()->project().name, std::string("mynet"));
      QVERIFY(win.w.windowTitle().startsWith("mynet.json"));
      QVERIFY(!win.doc()->isModified());
      QCOMPARE(load_project(mine.toStdString()).name, std::string("mynet"));
      QVERIFY(original.open(QIODevice::ReadOnly));
      QCOMPARE(original.readAll(), sampleBytes);
      original.close();

      // A name the user chose stays when the file is saved under another.
      ProjectSettings s = win.doc()->settings();
      ProjectSettings named = s;
      named.name = "my favourite";
      win.doc()->undoStack()->push(new SetTrainingCommand(win.doc(), s, named, "name", "name"));
      QVERIFY(win.w.saveProjectAs(dir.filePath("copy.json"), &error));
      QCOMPARE(win.doc()->project().name, std::string("my favourite"));

      // New, then Save As: an untitled project takes its file's name.
      QTest::keyClick(&win.w, Qt::Key_N, Qt::ControlModifier);
      win.settle();
      QCOMPARE(win.doc()->project().name, std::string("untitled"));
      QVERIFY(win.w.saveProjectAs(dir.filePath("other.json"), &error));
      QCOMPARE(win.doc()->project().name, std::string("other"));

      // Recent files, newest first; a vanished one is said and forgotten.
      const QStringList recent = win.w.recentFiles();
      QCOMPARE(recent.value(0), dir.filePath("other.json"));
      QCOMPARE(recent.value(1), dir.filePath("copy.json"));
      QCOMPARE(recent.value(2), mine);
      QVERIFY(recent.contains(QFileInfo(sample).absoluteFilePath()));
      auto* menu = win.w.findChild<QMenu*>("recentMenu");
      QVERIFY(menu);
      emit menu->aboutToShow();
      QAction* third = win.w.findChild<QAction*>("recent-2");
      QVERIFY(third);
      third->trigger();
      QCOMPARE(win.doc()->filePath(), mine);
      QCOMPARE(win.w.recentFiles().value(0), mine);
      QVERIFY(QFile::remove(dir.filePath("copy.json")));
      emit menu->aboutToShow();
      {
        DialogDriver ok = DialogDriver::clickButton(QMessageBox::Ok);
        const int gone = static_cast<int>(win.w.recentFiles().indexOf(dir.filePath("copy.json")));
        QVERIFY(gone > 0);
        win.w.findChild<QAction*>(QStringLiteral("recent-%1").arg(gone))->trigger();
        QTRY_VERIFY(ok.answered());
        win.settle();
      }
      QCOMPARE(win.doc()->filePath(), mine);  // nothing lost
      QVERIFY(!win.w.recentFiles().contains(dir.filePath("copy.json")));

      // Open starts where the user last worked.
      {
        QString openIn;
        DialogDriver open([&](QWidget* w) {
          auto* d = qobject_cast<QFileDialog*>(w);
          QVERIFY(d);
          openIn = d->directory().absolutePath();
          d->reject();
        });
        QTest::keyClick(&win.w, Qt::Key_O, Qt::ControlModifier);
        QTRY_VERIFY(open.answered());
        win.settle();
        QCOMPARE(QFileInfo(openIn).canonicalFilePath(), QFileInfo(dir.path()).canonicalFilePath());
      }

      // Unsaved changes to a sample offer Save As, never Save over it.
      QVERIFY(win.w.openProject(sample, &error));
      win.w.editor()->addLayer(LayerType::ReLU, {500, 0});
      {
        QString saveText;
        DialogDriver prompt([&](QWidget* w) {
          auto* box = qobject_cast<QMessageBox*>(w);
          QVERIFY(box);
          saveText = box->button(QMessageBox::Save)->text();
          QTest::mouseClick(box->button(QMessageBox::Discard), Qt::LeftButton);
        });
        QTest::keyClick(&win.w, Qt::Key_N, Qt::ControlModifier);
        QTRY_VERIFY(prompt.answered());
        win.settle();
        QCOMPARE(saveText, QStringLiteral("Save As…"));
      }
      QVERIFY(win.doc()->project().model.nodes.empty());

      // The next session opens where this one ended.
      QVERIFY(win.w.openProject(mine, &error));
      win.visit(MainWindow::View::Runs);
      QVERIFY(win.w.close());
    }
    MainWindow again;
    QString error;
    QVERIFY2(again.restoreSession(&error), qPrintable(error));
    QCOMPARE(again.document()->filePath(), dir.filePath("mynet.json"));
    QCOMPARE(again.currentView(), MainWindow::View::Runs);
    // A last project that is gone: said, and the default project opens.
    QVERIFY(QFile::remove(dir.filePath("mynet.json")));
    QVERIFY(again.close());
    MainWindow third;
    error.clear();
    QVERIFY(third.restoreSession(&error));
    QCOMPARE(third.document()->samplePath(), QFileInfo(sample).absoluteFilePath());
  }

  void theInterfaceSaysWhatUsersCallThings() {
    Window win;
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    QToolBar* bar = win.w.findChild<QToolBar*>("mainToolBar");
    QVERIFY(bar);
    QAction* undoTool = win.w.findChild<QAction*>("undoTool");
    QVERIFY(undoTool && !undoTool->isEnabled());
    QWidget* compileButton = bar->widgetForAction(win.w.action("compile"));
    const int compileX = compileButton->x();

    // An edit in the properties form, as typed.
    win.w.designer()->focusNode(QStringLiteral("conv1"));
    auto* channels =
        qobject_cast<QSpinBox*>(win.w.properties()->fieldEditor("params.out_channels"));
    QVERIFY(channels);
    type_into(channels, QStringLiteral("8"));
    QCOMPARE(win.w.action("undo")->text(), QStringLiteral("&Undo Set output channels of conv1"));
    // The toolbar keeps its short text (the step is in the tooltip): nothing shifts.
    QVERIFY(undoTool->isEnabled());
    QCOMPARE(undoTool->text(), QStringLiteral("Undo"));
    QVERIFY2(undoTool->toolTip().contains("Set output channels of conv1"),
             qPrintable(undoTool->toolTip()));
    win.settle();
    QCOMPARE(compileButton->x(), compileX);

    // A kernel too large for its input: the problem names the field as the
    // form does, and clicking it puts the cursor in that field.
    auto* kernel = qobject_cast<QSpinBox*>(win.w.properties()->fieldEditor("params.kernel_h"));
    QVERIFY(kernel);
    type_into(kernel, QStringLiteral("40"));
    ProblemsPanel* problems = win.w.problems();
    int row = -1;
    for (int i = 0; i < problems->topLevelItemCount(); ++i)
      if (problems->fieldKey(i) == QLatin1String("params.kernel")) row = i;
    QVERIFY2(row >= 0, qPrintable(win.problemsText()));
    QTreeWidgetItem* item = problems->topLevelItem(row);
    QCOMPARE(item->text(2), QStringLiteral("Kernel"));
    QVERIFY(item->toolTip(2).contains("params.kernel"));
    QVERIFY(problems->isBlocking(row));
    QVERIFY(!item->icon(0).isNull());
    win.w.designer()->setFocus();
    QTest::mouseClick(problems->viewport(), Qt::LeftButton, {},
                      problems->visualItemRect(item).center());
    QTRY_COMPARE(QApplication::focusWidget(), win.w.properties()->fieldEditor("params.kernel_h"));
    // A training setting's problem uses the settings form's label.
    win.doc()->undoStack()->undo();
    auto* batch =
        qobject_cast<QSpinBox*>(win.w.settingsPanel()->fieldEditor("training.global_batch"));
    type_into(batch, QStringLiteral("70000"));
    win.w.checkReadiness();
    QVERIFY(win.problemAbout("training.global_batch", "at most 60000"));
    for (int i = 0; i < problems->topLevelItemCount(); ++i)
      if (problems->fieldKey(i) == QLatin1String("training.global_batch"))
        QCOMPARE(problems->topLevelItem(i)->text(2), QStringLiteral("Global batch"));
  }

  void eachViewSaysWhatItShowsAndClearsOnNew() {
    Window win;
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    QVERIFY2(win.w.memoryView()->summaryText().startsWith("Plan of lenet-fashion, compiled at"),
             qPrintable(win.w.memoryView()->summaryText()));
    // A short profiled run fills the training view and the timeline.
    TrainingView* training = win.w.trainingView();
    TrainingRequest request = training->requestFromControls();
    request.max_steps = 6;
    request.validate = false;
    request.profile_begin = 2;
    request.profile_end = 4;
    QVERIFY2(training->start(win.doc()->project(), request, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(!training->isRunning(), 60000);
    QVERIFY2(
        training->captionText() ==
            QStringLiteral("lenet-fashion, run #%1 (finished, 6 steps)").arg(training->lastRunId()),
        qPrintable(training->captionText()));
    QVERIFY(training->lossPlot()->pointCount(0) > 0);
    QTRY_VERIFY(win.w.timelineView()->hasProfile());
    // The timeline names the run, its project and the profiled steps.
    const QString caption = win.w.timelineView()->captionText();
    QVERIFY2(caption.contains(QStringLiteral("Run %1").arg(training->lastRunId())) &&
                 caption.contains("lenet-fashion") && caption.contains("steps 2–3"),
             qPrintable(caption));

    // New: nothing of the old project's run is left on show.
    win.visit(MainWindow::View::Training);
    QTest::keyClick(&win.w, Qt::Key_N, Qt::ControlModifier);
    win.settle();
    QCOMPARE(training->lossPlot()->pointCount(0), size_t{0});
    QVERIFY2(training->captionText().startsWith("No run of untitled"),
             qPrintable(training->captionText()));
    QVERIFY(!win.w.timelineView()->hasProfile());
    QVERIFY(!win.w.memoryView()->compiled());
    QVERIFY2(!win.w.statusBar()->currentMessage().contains("Compiled"),
             qPrintable(win.w.statusBar()->currentMessage()));
  }

  // A project on a mesh with a tensor dimension: the compile marks each
  // layer it splits in the designer; a project without one marks none.
  void theDesignerShowsHowLayersSplit() {
    Project p = load_project(project_path("vit-tiny-fashion.json").toStdString());
    std::string why;
    QVERIFY(parse_device_set("cpu:2", p.training.devices, why));
    p.training.tensor_ranks = 2;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("vit-tp.json"));
    save_project(p, path.toStdString());
    Window win;
    QString error;
    QVERIFY2(win.w.openProject(path, &error), qPrintable(error));
    QVERIFY(win.w.memoryView()->compiled());
    DesignerScene* scene = win.w.designer()->designerScene();
    QCOMPARE(scene->nodeItem(QStringLiteral("b1_attn"))->tensorSplit(), QStringLiteral("heads"));
    QCOMPARE(scene->nodeItem(QStringLiteral("b1_fc1"))->tensorSplit(), QStringLiteral("column"));
    QCOMPARE(scene->nodeItem(QStringLiteral("b1_gelu"))->tensorSplit(), QStringLiteral("channels"));
    QCOMPARE(scene->nodeItem(QStringLiteral("b1_fc2"))->tensorSplit(), QStringLiteral("row"));
    QVERIFY(scene->nodeItem(QStringLiteral("b1_ln1"))->tensorSplit().isEmpty());
    QVERIFY(scene->nodeItem(QStringLiteral("patch"))->tensorSplit().isEmpty());
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    for (int i = 0; i < scene->nodeCount(); ++i)
      QVERIFY(scene->nodeItem(i)->tensorSplit().isEmpty());
  }

  void aLayerAskedForElsewhereShowsItsProperties() {
    Window win;
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    auto* settingsDock = win.w.findChild<QDockWidget*>("settingsDock");
    auto* propertiesDock = win.w.findChild<QDockWidget*>("propertiesDock");
    settingsDock->raise();
    QCoreApplication::processEvents();
    QVERIFY(win.w.properties()->visibleRegion().isEmpty());
    const CompiledPlan* cp = win.w.memoryView()->compiled();
    QVERIFY(cp);
    const int fc1 = win.doc()->nodeIndex("fc1");
    // A region owner's link in the Memory view, as a timeline bar asks too.
    emit win.w.memoryView()->layerRequested(fc1);
    win.settle();
    QCOMPARE(win.w.designer()->designerScene()->currentNode(), fc1);
    QVERIFY(propertiesDock->isVisible());
    QVERIFY(!win.w.properties()->visibleRegion().isEmpty());
  }

  void thePaletteForgetsItsEntryAfterADrag() {
    Window win;
    PaletteWidget* palette = win.w.palette();
    QTreeWidgetItem* conv = palette->itemFor(LayerType::Conv2d);
    QVERIFY(conv);
    palette->scrollToItem(conv);
    const QPoint from = palette->visualItemRect(conv).center();
    // The press picks the entry; the moves start the drag. The offscreen
    // platform has no drag and drop, so QDrag::exec returns at once (drops
    // onto the canvas are driven by canvas_driver.h): what is checked here is
    // what the palette does once a drag is over.
    QTest::mousePress(palette->viewport(), Qt::LeftButton, {}, from);
    QCOMPARE(palette->currentItem(), conv);
    QTest::mouseMove(palette->viewport(), from + QPoint(40, 0));
    QTest::mouseMove(palette->viewport(), from + QPoint(80, 0));
    QTest::mouseRelease(palette->viewport(), Qt::LeftButton, {}, from + QPoint(80, 0));
    win.settle();
    QVERIFY(palette->selectedItems().isEmpty());
    QVERIFY(!palette->currentItem());
  }

  // Readable at 1280x800: in every view, and in both tabs of the right dock,
  // no text of a visible label, button, check box or box is cut (each shows
  // at least the width its text needs; a scroll area may hide rows below,
  // never the right part of a row), and the palette shows its whole names.
  void everyViewIsReadableAt1280x800() {
    // A first start, with fresh settings, on a 1280x800 screen (CTest gives
    // this test that screen: tests/gui/screen-1280x800.json): the window
    // fits the screen, whole, and every view is read at that size.
    QSettings().clear();
    Window win{QSize()};
    const QRect room = win.w.screen()->availableGeometry();
    QVERIFY2(room.size() == QSize(1280, 800),
             "run through CTest, which gives this test a 1280x800 screen (QT_QPA_PLATFORM="
             "offscreen:configfile=tests/gui/screen-1280x800.json)");
    QVERIFY2(room.contains(win.w.frameGeometry()),
             qPrintable(QStringLiteral("the first window %1,%2 %3x%4 is not inside the screen")
                            .arg(win.w.frameGeometry().x())
                            .arg(win.w.frameGeometry().y())
                            .arg(win.w.frameGeometry().width())
                            .arg(win.w.frameGeometry().height())));
    const QSize first = win.w.size();
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    win.settle();
    // Every view with content (a short validated, profiled run, the run
    // selected in the Runs view), each one shown: the window keeps its size.
    QTemporaryDir shots;
    QVERIFY2(win.w.writeScreenshots(shots.path(), &error, 12), qPrintable(error));
    QCOMPARE(win.w.trainingView()->confusionMatrix()->classes(), 10);
    QVERIFY(win.w.timelineView()->hasProfile());
    if (win.w.size() != first) {
      for (int i = 0; i < win.w.tabs()->count(); ++i)
        qWarning() << win.w.tabs()->tabText(i) << "needs"
                   << win.w.tabs()->widget(i)->minimumSizeHint();
    }
    QCOMPARE(win.w.size(), first);
    QStringList cut;
    auto check = [&](const QString& where) {
      for (QWidget* widget : win.w.findChildren<QWidget*>()) {
        if (!widget->isVisible() || widget->visibleRegion().isEmpty()) continue;
        int need = 0;
        QString text;
        if (auto* items = qobject_cast<QAbstractItemView*>(widget)) {
          cut << tr::test::cut_in_item_view(items, where);
          continue;
        }
        if (auto* plot = qobject_cast<QCustomPlot*>(widget)) {
          cut << tr::test::overlapping_ticks(plot, where);
          continue;
        }
        if (auto* chart = qobject_cast<LifetimeChart*>(widget)) {
          for (const QString& names : chart->crossedLabels())
            cut << QStringLiteral("%1: step lifetimes' names %2 cross").arg(where, names);
          continue;
        }
        if (auto* grid = qobject_cast<SampleGrid*>(widget)) {
          for (const QString& caption : grid->cutCaptions())
            cut << QStringLiteral("%1: sample caption '%2' cut").arg(where, caption);
          continue;
        }
        if (auto* graphics = qobject_cast<QGraphicsView*>(widget)) {
          // The designer's nodes: every title and subtitle whole.
          for (QGraphicsItem* item : graphics->items(graphics->viewport()->rect()))
            if (item->type() == NodeItem::Type)
              for (const QString& shortened :
                   static_cast<NodeItem*>(item)->cutTexts(graphics->font()))
                cut << QStringLiteral("%1: node '%2' cuts '%3'")
                           .arg(where, static_cast<NodeItem*>(item)->nodeId(), shortened);
          continue;
        }
        if (auto* label = qobject_cast<QLabel*>(widget)) {
          if (label->wordWrap() || label->text().isEmpty() || label->textFormat() == Qt::RichText)
            continue;
          text = label->text();
          need = label->fontMetrics().horizontalAdvance(text.split('\n').first());
        } else if (auto* button = qobject_cast<QAbstractButton*>(widget)) {
          if (button->text().isEmpty()) continue;
          text = button->text();
          need = button->sizeHint().width() - 2;  // the style's own margins count
        } else if (auto* edit = qobject_cast<QLineEdit*>(widget);
                   edit && edit->text().isEmpty() && !edit->placeholderText().isEmpty() &&
                   !qobject_cast<QAbstractSpinBox*>(edit->parentWidget())) {
          // An empty field's grey hint ("none: fresh weights"):
          // what it shows inside its frame and the line edit's own margins.
          text = edit->placeholderText();
          const int frame = edit->hasFrame() ? edit->style()->pixelMetric(
                                                   QStyle::PM_DefaultFrameWidth, nullptr, edit)
                                             : 0;
          const QMargins m = edit->textMargins();
          need = edit->fontMetrics().horizontalAdvance(text) + 2 * frame + 4 + m.left() + m.right();
        } else if (auto* box = qobject_cast<QAbstractSpinBox*>(widget)) {
          // What its field shows ("project's (3)"), in the field beside the arrows.
          const QLineEdit* field = box->findChild<QLineEdit*>();
          text = field ? field->text() : box->text();
          need = field ? field->fontMetrics().horizontalAdvance(text) + 4 -
                             (field->width() - box->width())
                       : box->minimumSizeHint().width() - 2;
        } else {
          continue;
        }
        // Shown width: a scroll area or a splitter may hide part of it.
        const int shown = widget->visibleRegion().boundingRect().width();
        if (std::min(widget->width(), shown) < need)
          cut << QStringLiteral("%1: %2 '%3' shows %4 of %5 px, needs %6")
                     .arg(where, widget->objectName(), text.left(40))
                     .arg(shown)
                     .arg(widget->width())
                     .arg(need);
      }
    };
    for (MainWindow::View v : kViews) {
      win.visit(v);
      check(win.w.tabs()->tabText(tab_of(win.w, v)));
    }
    // Two runs that differ, compared: the Compare pane's names and values.
    {
      const qint64 earlier = win.w.trainingView()->lastRunId();
      ProjectSettings other = win.doc()->settings();
      other.training.optimizer.lr = 0.02;
      other.training.optimizer.momentum = 0.8;
      win.doc()->undoStack()->push(new SetTrainingCommand(win.doc(), win.doc()->settings(), other,
                                                          QStringLiteral("training.optimizer.lr"),
                                                          QStringLiteral("learning rate")));
      TrainingRequest request = win.w.trainingView()->requestFromControls();
      request.max_steps = 3;
      request.validate = false;
      request.profile_begin = -1;
      QVERIFY2(win.w.trainingView()->start(win.doc()->project(), request, &error),
               qPrintable(error));
      QTRY_VERIFY_WITH_TIMEOUT(!win.w.trainingView()->isRunning(), 60000);
      win.visit(MainWindow::View::Runs);
      win.w.runsView()->refresh();
      win.w.runsView()->selectRuns({earlier, win.w.trainingView()->lastRunId()});
      win.w.runsView()->tabs()->setCurrentIndex(1);  // Compare
      win.settle();
      check(QStringLiteral("Runs, two compared"));
    }
    PaletteWidget* palette = win.w.palette();
    for (int i = 0; i < palette->topLevelItemCount(); ++i) {
      QTreeWidgetItem* group = palette->topLevelItem(i);
      QList<QTreeWidgetItem*> items{group};
      for (int c = 0; c < group->childCount(); ++c) items << group->child(c);
      for (QTreeWidgetItem* item : items) {
        const QRect r = palette->visualItemRect(item);
        const int need = palette->fontMetrics().horizontalAdvance(item->text(0));
        const int icon = item->icon(0).isNull() ? 0 : palette->iconSize().width() + 4;
        const int shows = palette->viewport()->width() - r.left() - icon - 6;
        if (shows < need)
          cut << QStringLiteral("palette: '%1' needs %2 px, shows %3")
                     .arg(item->text(0))
                     .arg(need)
                     .arg(shows);
      }
    }
    win.w.findChild<QDockWidget*>("settingsDock")->raise();
    win.settle();
    // The form is taller than the dock: each screenful of it, scrolled.
    auto* form = win.w.settingsPanel()->findChild<QScrollArea*>();
    QVERIFY(form);
    QScrollBar* down = form->verticalScrollBar();
    for (int at = 0;; at += down->pageStep()) {
      down->setValue(std::min(at, down->maximum()));
      win.settle();
      check(QStringLiteral("Training settings, scrolled %1 px").arg(down->value()));
      if (down->value() >= down->maximum()) break;
    }
    down->setValue(0);
    auto* analysis = win.w.findChild<QDockWidget*>("analysisDock");
    QVERIFY(!analysis->isVisible());  // until asked for
    const int viewsTall = win.w.tabs()->height();
    win.w.action(QStringLiteral("analyze"))->trigger();
    win.settle();
    QVERIFY(win.w.networkAnalysis()->isVisible());
    // Asked for, it shows rows of the table, not only its header (the views
    // scroll rather than keep the dock short).
    const QTableView* layers = win.w.networkAnalysis()->table();
    const auto rows = [&] {
      return layers->viewport()->height() / layers->verticalHeader()->defaultSectionSize();
    };
    QTRY_VERIFY2(rows() >= 4, qPrintable(QStringLiteral("%1 rows of the table show").arg(rows())));
    QVERIFY(win.w.tabs()->height() < viewsTall);
    win.settle();
    check(QStringLiteral("Network analysis"));
    for (MainWindow::View v : kViews) {  // each view, squeezed above it
      win.visit(v);
      check(win.w.tabs()->tabText(tab_of(win.w, v)) + QStringLiteral(", under Network analysis"));
    }
    QCOMPARE(win.w.size(), first);  // nothing raised grew the window
    // Closed, it gives the views back their height, and shows again as tall.
    analysis->close();
    QTRY_COMPARE(win.w.tabs()->height(), viewsTall);
    win.w.action(QStringLiteral("analyze"))->trigger();
    QTRY_VERIFY(rows() >= 4);
    // Widening the right dock never takes from the palette (it keeps the
    // width its names need).
    auto* right = win.w.findChild<QDockWidget*>("propertiesDock");
    auto* left = win.w.findChild<QDockWidget*>("paletteDock");
    const int leftWidth = left->width(), rightWidth = right->width();
    win.w.resizeDocks({right}, {rightWidth + 100}, Qt::Horizontal);
    win.settle();
    QVERIFY(right->width() >= rightWidth);
    QCOMPARE(left->width(), leftWidth);
    // A long message stops short of the layer/parameter counter.
    emit win.w.trainingView()->status(QString(400, QLatin1Char('x')));
    QStatusBar* bar = win.w.statusBar();
    const QLabel* counter = nullptr;
    for (QLabel* l : bar->findChildren<QLabel*>())
      if (l->text().contains("parameters")) counter = l;
    QVERIFY(counter);
    QVERIFY(bar->fontMetrics().horizontalAdvance(bar->currentMessage()) <
            bar->width() - counter->width());
    QCOMPARE(bar->toolTip(), QString(400, QLatin1Char('x')));
    for (const QString& line : cut) qWarning("%s", qPrintable(line));
    QVERIFY2(cut.isEmpty(), qPrintable(QStringLiteral("%1 cut, listed above").arg(cut.size())));
  }

  void theThemeFollowsTheChoiceAndEveryViewRecolours() {
    Window win;
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    const QPalette system = QApplication::palette();
    auto* menu = win.w.findChild<QMenu*>("themeMenu");
    QVERIFY(menu);
    QAction* dark = win.w.findChild<QAction*>("theme-dark");
    QAction* light = win.w.findChild<QAction*>("theme-light");
    QAction* followSystem = win.w.findChild<QAction*>("theme-system");
    QVERIFY(dark && light && followSystem);
    dark->trigger();
    win.settle();
    QVERIFY(is_dark(QApplication::palette()));
    QVERIFY(dark->isChecked() && !light->isChecked());
    QCOMPARE(QSettings().value("view/theme").toString(), QStringLiteral("dark"));
    // The plots take the palette's colours (they paint their own background).
    CurvePlot* loss = win.w.trainingView()->lossPlot();
    QCOMPARE(loss->xAxis->tickLabelColor(), QApplication::palette().color(QPalette::Text));
    const QImage shot = loss->toPixmap(200, 150).toImage();
    QVERIFY(QColor(shot.pixel(5, shot.height() / 2)).lightness() < 100);
    // Tones read on the background: the error colour is light on dark.
    auto* message = win.w.settingsPanel()->findChild<QLabel*>("training.optimizer.lr.message");
    QVERIFY(message);
    QCOMPARE(message->property("tone").toString(), QStringLiteral("error"));
    QVERIFY(message->palette().color(QPalette::WindowText).lightness() > 128);
    light->trigger();
    win.settle();
    QVERIFY(!is_dark(QApplication::palette()));
    QCOMPARE(loss->xAxis->tickLabelColor(), QApplication::palette().color(QPalette::Text));
    QVERIFY(message->palette().color(QPalette::WindowText).lightness() < 128);
    followSystem->trigger();
    QCOMPARE(QApplication::palette().color(QPalette::Window), system.color(QPalette::Window));
    QCOMPARE(QSettings().value("view/theme").toString(), QStringLiteral("system"));
  }

  void helpMenuAndRedoKeys() {
    Window win;
    QString error;
    QVERIFY(win.w.openProject(project_path("lenet-fashion.json"), &error));
    win.w.editor()->addLayer(LayerType::ReLU, {500, 0});
    const size_t nodes = win.doc()->project().model.nodes.size();
    win.w.designer()->setFocus();
    QTest::keyClick(&win.w, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(win.doc()->project().model.nodes.size(), nodes - 1);
    QTest::keyClick(&win.w, Qt::Key_Y, Qt::ControlModifier);
    QCOMPARE(win.doc()->project().model.nodes.size(), nodes);

    QStringList rows;
    DialogDriver shortcuts([&](QWidget* w) {
      auto* table = w->findChild<QTreeWidget*>("shortcutsTable");
      QVERIFY(table);
      for (int i = 0; i < table->topLevelItemCount(); ++i)
        rows << table->topLevelItem(i)->text(1) + "=" + table->topLevelItem(i)->text(2);
      static_cast<QDialog*>(w)->reject();
    });
    win.w.action("shortcuts")->trigger();
    QTRY_VERIFY(shortcuts.answered());
    win.settle();
    QVERIFY2(rows.contains("Pause=F8"), qPrintable(rows.join(" | ")));
    QVERIFY2(rows.filter(QRegularExpression("^Redo=.*Ctrl\\+Y")).size() == 1,
             qPrintable(rows.join(" | ")));
    QVERIFY(rows.contains("Train=Ctrl+R"));
    QVERIFY(rows.contains("Memory=Alt+2"));

    QString about;
    DialogDriver box([&](QWidget* w) {
      about = static_cast<QMessageBox*>(w)->text();
      static_cast<QMessageBox*>(w)->accept();
    });
    win.w.action("about")->trigger();
    QTRY_VERIFY(box.answered());
    win.settle();
    QVERIFY(about.contains(QStringLiteral(TR_VERSION)) && about.contains("GPL-3.0-or-later"));
  }
};

QTEST_MAIN(TestJourneys)
#include "test_journeys.moc"

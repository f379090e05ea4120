// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDeadlineTimer>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>

#include <renaissance/dataset_probe.h>

#include <renaissance/compiled_plan.h>
#include <renaissance/devices.h>
#include <renaissance/error.h>
#include <renaissance/plan_report.h>
#include <renaissance/project_io.h>
#include <renaissance/store_location.h>
#include "analysis/network_analysis_panel.h"
#include "dataset/dataset_view.h"
#include "designer/auto_layout.h"
#include "designer/designer_scene.h"
#include "designer/designer_view.h"
#include "designer/layer_catalog.h"
#include "designer/model_editor.h"
#include "designer/palette_widget.h"
#include "designer/param_names.h"
#include "designer/properties_panel.h"
#include "device_selector.h"
#include "memory/memory_view.h"
#include "onnx_export_file.h"
#include "onnx_import_file.h"
#include "predict/model_weights.h"
#include "predict/try_model_dialog.h"
#include "problems_panel.h"
#include "project_document.h"
#include "runs/runs_view.h"
#include "settings/set_training_command.h"
#include "settings/training_settings_panel.h"
#include "template_catalog.h"
#include "theme.h"
#include "timeline/profile_origin.h"
#include "timeline/timeline_view.h"
#include "training/resume_request.h"
#include "training/training_view.h"
#include "undo_keys_filter.h"
#include "widgets/count_text.h"

namespace tr::gui {

namespace {

// Bump when docks or toolbars change so an old saved layout is not applied.
constexpr int kLayoutVersion = 3;
constexpr const char* kDefaultProject = "lenet-fashion.json";

// What File > New starts from: no layers, the loader's defaults for the rest.
constexpr const char* kEmptyProject =
    R"({"format": 1, "name": "untitled", "model": {"nodes": [], "edges": []}})";

using V = MainWindow::View;
const MainWindow::ViewInfo kViews[] = {
    {V::Design, "viewDesign", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Design"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "&Design"), "designer.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "The network: layers from the palette, connected port to port"),
     [](const MainWindow& w) -> QWidget* { return w.designer(); },
     [](MainWindow& w) { w.designer()->showOverview(); }},
    {V::Memory, "viewMemory", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Memory"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "&Memory"), "memory.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "The compiled memory plan: every region and tensor's place, per variant"),
     [](const MainWindow& w) -> QWidget* { return w.memoryView(); },
     // The plan by lifetime is what the Memory view shows that no other tool does.
     [](MainWindow& w) { w.memoryView()->arenaTabs()->setCurrentIndex(1); }},
    {V::Timeline, "viewTimeline", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Timeline"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "&Timeline"), "timeline.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "Profiled steps on the five streams of each rank, with their overlap"),
     [](const MainWindow& w) -> QWidget* { return w.timelineView(); }, nullptr},
    {V::Training, "viewTraining", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Training"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "T&raining"), "training.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "The run: train, pause, stop; its curves and its confusion matrix"),
     [](const MainWindow& w) -> QWidget* { return w.trainingView(); }, nullptr},
    {V::Runs, "viewRuns", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Runs"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "R&uns"), "runs.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "Every recorded run: their curves overlaid, their settings compared"),
     [](const MainWindow& w) -> QWidget* { return w.runsView(); }, nullptr},
    {V::Data, "viewData", QT_TRANSLATE_NOOP("tr::gui::MainWindow", "Data"),
     QT_TRANSLATE_NOOP("tr::gui::MainWindow", "&Data"), "data.png",
     QT_TRANSLATE_NOOP("tr::gui::MainWindow",
                       "The dataset: classes and counts, images as the network sees them"),
     [](const MainWindow& w) -> QWidget* { return w.datasetView(); },
     // It loads on a thread of its own: its images, not "Loading".
     [](MainWindow& w) {
       QDeadlineTimer loading(20000);
       while (!w.datasetView()->isCurrent() && !loading.hasExpired())
         QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
     }},
};

// The row of `v`.
const MainWindow::ViewInfo& view_info(MainWindow::View v) {
  for (const MainWindow::ViewInfo& i : kViews)
    if (i.view == v) return i;
  return kViews[0];
}

// The index of the node called `id` in `project`, -1 when there is none.
int node_index(const Project& project, const std::string& id) {
  const auto& nodes = project.model.nodes;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

// How each design node splits over the tensor ranks, by id: a compiled
// layer's split, or for a composite layer (attention) "heads".
QHash<QString, QString> tensor_splits(const CompiledPlan& cp) {
  QHash<QString, QString> out;
  if (cp.tensor_ranks() <= 1) return out;
  const auto& nodes = cp.project().model.nodes;
  for (size_t v = 0; v < nodes.size(); ++v) {
    const std::string_view split = cp.tensor_split(static_cast<int>(v));
    if (split == "whole") continue;
    const QString id = QString::fromStdString(nodes[v].design_id());
    if (!nodes[v].part_of.empty())
      out.insert(id, QStringLiteral("heads"));
    else
      out.insert(id, split == "local"
                         ? QStringLiteral("channels")
                         : QString::fromUtf8(split.data(), static_cast<qsizetype>(split.size())));
  }
  return out;
}

// The layers in `cp` of the document's node `node`: itself, or a composite
// layer's parts (matched by id, as the design may have changed since `cp`
// was compiled); empty when absent.
QList<int> layers_in(const CompiledPlan* cp, const Project& doc, int node) {
  QList<int> out;
  if (!cp || node < 0 || static_cast<size_t>(node) >= doc.model.nodes.size()) return out;
  const std::string& id = doc.model.nodes[static_cast<size_t>(node)].id;
  const auto& layers = cp->project().model.nodes;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].design_id() == id) out << static_cast<int>(i);
  return out;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      doc_(new ProjectDocument(this)),
      editor_(new ModelEditor(doc_, this)),
      scan_(scan_devices()),
      tabs_(new QTabWidget(this)),
      designer_(new DesignerView(doc_, editor_, this)),
      memory_(new MemoryView(this)),
      timeline_(new TimelineView(this)),
      training_(new TrainingView(this)),
      runs_(new RunsView(this)),
      data_(new DatasetView(doc_, this)),
      palette_(new PaletteWidget(this)),
      properties_(new PropertiesPanel(doc_, editor_, this)),
      problems_(new ProblemsPanel(this)),
      analysis_(new NetworkAnalysisPanel(this)),
      settings_(new TrainingSettingsPanel(doc_, this)),
      devices_(new DeviceSelector(scan_, this)),
      summary_(new QLabel(this)),
      readinessTimer_(new QTimer(this)) {
  setObjectName(QStringLiteral("MainWindow"));
  tabs_->setDocumentMode(true);
  for (const ViewInfo& v : kViews) {
    const int tab = tabs_->addTab(v.widget(*this), tr(v.title));
    tabs_->setTabToolTip(tab, tr(v.shows));
  }
  setCentralWidget(tabs_);
  createActions();
  createMenus();
  createToolBar();
  createDocks();
  statusBar()->addPermanentWidget(summary_);
  statusBar()->installEventFilter(this);
  // Undo and Redo typed in a field of the forms undo the project too.
  auto* undoKeys = new UndoKeysFilter(this);
  undoKeys->watch(properties_, [this] { properties_->commitPendingEdits(); });
  undoKeys->watch(settings_, [this] { settings_->commitPendingEdits(); });

  connect(doc_, &ProjectDocument::analysisChanged, this, [this] {
    problems_->setDesignProblems(doc_->analysis().problems);
    updateStatusSummary();
  });
  connect(doc_, &ProjectDocument::graphChanged, this, &MainWindow::designChanged);
  connect(doc_, &ProjectDocument::nodeChanged, this, &MainWindow::designChanged);
  connect(doc_, &ProjectDocument::settingsChanged, this, [this] {
    devices_->showDevices(doc_->project().training.devices);
    designChanged();
    updateTitle();  // an untitled project is called by its name
  });
  connect(doc_, &ProjectDocument::modifiedChanged, this, &MainWindow::updateTitle);
  connect(doc_, &ProjectDocument::filePathChanged, this, &MainWindow::updateTitle);
  connect(designer_->designerScene(), &DesignerScene::currentNodeChanged, properties_,
          &PropertiesPanel::showNode);
  connect(designer_->designerScene(), &DesignerScene::currentNodeChanged, this,
          &MainWindow::selectionChanged);
  connect(timeline_, &TimelineView::layerClicked, this,
          [this](int layer) { requestLayer(timeline_->compiled(), layer); });
  connect(memory_, &MemoryView::layerRequested, this,
          [this](int layer) { requestLayer(memory_->compiled(), layer); });
  // A point of the recomputation curve: its bytes become the memory budget
  // (one undoable settings change, as the settings panel makes it).
  connect(memory_, &MemoryView::budgetPicked, this, [this](qint64 mib) {
    const ProjectSettings before = doc_->settings();
    ProjectSettings after = before;
    after.training.memory_budget_mib = mib;
    if (after == before) return;
    doc_->undoStack()->push(new SetTrainingCommand(
        doc_, before, after, QStringLiteral("training.memory_budget_mib"), tr("memory budget")));
    statusBar()->showMessage(
        tr("Memory budget set to %1 MiB a device: compile to see the plan").arg(mib), 6000);
  });
  connect(training_, &TrainingView::profileReady, this,
          [this](const std::vector<ProfileSpan>& spans, std::shared_ptr<const CompiledPlan> cp) {
            // The run is recorded before it trains, so its id is known here.
            ProfileOrigin origin{training_->lastRunId(),
                                 cp ? QString::fromStdString(cp->project().name) : QString(),
                                 {}};
            timeline_->setProfile(spans, std::move(cp), std::move(origin));
            selectionChanged(designer_->designerScene()->currentNode());
          });
  connect(training_, &TrainingView::stateChanged, this, &MainWindow::updateTrainingActions);
  connect(training_, &TrainingView::runEnded, this, [this](qint64 run) {
    runs_->refresh();
    runs_->selectRuns({run});
    updateTrainingActions();
  });
  connect(training_, &TrainingView::pausedAt, this, &MainWindow::updateTrainingActions);
  connect(runs_, &RunsView::resumeRequested, this, [this](qint64 run) {
    QString why;
    if (!resumeRun(run, &why)) QMessageBox::warning(this, tr("Resume run %1").arg(run), why);
  });
  connect(runs_, &RunsView::followRequested, this, [this](qint64 run) {
    QString why;
    if (!training_->follow(runs_->storePath(), run, &why)) {
      QMessageBox::warning(this, tr("Follow run %1").arg(run), why);
      return;
    }
    showView(View::Training);
  });
  connect(runs_, &RunsView::runActivated, this, [this](qint64 run) {
    showStatus(tr("Run %1: its curves, configuration and details are below").arg(run), 5000);
  });
  problems_->setFieldNamer([this](const QString& key) {
    const QString param = param_label(key);
    return param.isEmpty() ? settings_->fieldLabel(key) : param;
  });
  // A layer clicked in the analysis is shown in the designer.
  connect(analysis_, &NetworkAnalysisPanel::layerActivated, this, [this](int node) {
    const auto& nodes = doc_->project().model.nodes;
    if (node < 0 || static_cast<size_t>(node) >= nodes.size()) return;
    showView(View::Design);
    designer_->focusNode(QString::fromStdString(nodes[static_cast<size_t>(node)].id));
  });
  connect(problems_, &ProblemsPanel::nodeRequested, this,
          [this](const QString& id, const QString& field) {
            showView(View::Design);
            designer_->focusNode(id);
            propertiesDock_->show();
            propertiesDock_->raise();
            // The form is rebuilt for the node and its editors show only once
            // the event loop has run: focus the field then.
            const QString key = param_editor_key(field);
            QTimer::singleShot(0, properties_, [this, key] {
              if (QWidget* editor = properties_->fieldEditor(key)) editor->setFocus();
            });
          });
  connect(problems_, &ProblemsPanel::settingRequested, this, [this](const QString& field) {
    settingsDock_->show();
    settingsDock_->raise();
    QWidget* editor = settings_->fieldEditor(field);
    // A setting the form shows as a whole group ("dataset") or in the
    // toolbar ("training.devices") has no editor of its own.
    if (!editor && field == QLatin1String("training.devices")) editor = devices_;
    if (editor) {
      editor->setFocus();
      if (auto* scroll = settings_->findChild<QScrollArea*>()) scroll->ensureWidgetVisible(editor);
    }
  });
  connect(problems_, &ProblemsPanel::countChanged, this, [this](int n) {
    problemsDock_->setWindowTitle(n ? tr("Problems (%1)").arg(n) : tr("Problems"));
    updateStatusSummary();
  });
  connect(palette_, &PaletteWidget::layerActivated, this, [this](LayerType t) {
    showView(View::Design);
    designer_->addLayerAtCentre(t);
  });
  connect(devices_, &DeviceSelector::devicesChosen, editor_, &ModelEditor::setDevices);
  auto say = [this](const QString& text) { showStatus(text, 8000); };
  connect(editor_, &ModelEditor::refused, this, say);
  connect(designer_, &DesignerView::refused, this, say);
  auto hover = [this](const QString& text) {
    if (text.isEmpty())
      statusBar()->clearMessage();
    else
      showStatus(text);
  };
  connect(memory_, &MemoryView::status, this, hover);
  connect(timeline_, &TimelineView::status, this, hover);
  connect(training_, &TrainingView::status, this, say);
  connect(runs_, &RunsView::status, this, say);

  // Checking compiles the design: wait for a pause in the typing or dragging.
  readinessTimer_->setSingleShot(true);
  readinessTimer_->setInterval(250);
  connect(readinessTimer_, &QTimer::timeout, this, [this] { checkReadiness(); });
  training_->setStartCheck([this](QString* why) {
    settings_->commitPendingEdits();
    checkReadiness();
    *why = trainBlockedReason();
    if (!why->isEmpty()) problemsDock_->show();
    return why->isEmpty();
  });

  restoreLayout();
  newProject();
}

MainWindow::~MainWindow() {
  // ~QWidget deletes the children after this part of the window is gone;
  // what they signal on the way (the undo stack's cleanChanged, a run the
  // training view stops) must not reach it.
  for (QObject* child : findChildren<QObject*>()) disconnect(child, nullptr, this, nullptr);
}

QString MainWindow::samplesFolder() {
  const QString def = defaultProjectPath();
  return def.isEmpty() ? QString() : QFileInfo(def).absolutePath();
}

bool MainWindow::isSample(const QString& path) {
  const QString samples = samplesFolder();
  return !samples.isEmpty() && QFileInfo(QFileInfo(path).absolutePath()).canonicalFilePath() ==
                                   QFileInfo(samples).canonicalFilePath();
}

QStringList MainWindow::recentFiles() const {
  return QSettings().value(QStringLiteral("files/recent")).toStringList();
}

void MainWindow::addRecent(const QString& path) {
  QStringList recent = recentFiles();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  QSettings().setValue(QStringLiteral("files/recent"), recent);
}

void MainWindow::forgetRecent(const QString& path) {
  QStringList recent = recentFiles();
  recent.removeAll(path);
  QSettings().setValue(QStringLiteral("files/recent"), recent);
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = recentFiles();
  for (int i = 0; i < recent.size(); ++i) {
    const QString path = recent[i];
    QAction* a = recentMenu_->addAction(
        tr("&%1 %2").arg(i < 9 ? QString::number(i + 1) : QStringLiteral("1%1").arg(i - 9),
                         QFileInfo(path).fileName()));
    a->setObjectName(QStringLiteral("recent-%1").arg(i));
    a->setToolTip(path);
    a->setStatusTip(path);
    connect(a, &QAction::triggered, this, [this, path] {
      if (!maybeSave()) return;
      QString error;
      if (!openProject(path, &error)) {
        if (!QFileInfo::exists(path)) forgetRecent(path);
        QMessageBox::warning(this, tr("Cannot open the project"), error);
      }
    });
  }
  if (recent.isEmpty()) recentMenu_->addAction(tr("No recent projects"))->setEnabled(false);
  recentMenu_->addSeparator();
  QAction* clear = recentMenu_->addAction(tr("&Clear the List"));
  clear->setObjectName(QStringLiteral("clearRecent"));
  clear->setEnabled(!recent.isEmpty());
  connect(clear, &QAction::triggered, this,
          [] { QSettings().remove(QStringLiteral("files/recent")); });
}

namespace {

QString last_folder() {
  const QString last = QSettings().value(QStringLiteral("files/lastFolder")).toString();
  return !last.isEmpty() && QFileInfo(last).isDir() ? last : QString();
}

QString documents_folder() {
  const QString docs = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
  return QFileInfo(docs).isDir() ? docs : QDir::homePath();
}

}  // namespace

QString MainWindow::openFolder() const {
  if (const QString last = last_folder(); !last.isEmpty()) return last;
  if (!doc_->samplePath().isEmpty() && !samplesFolder().isEmpty()) return samplesFolder();
  return documents_folder();
}

QString MainWindow::saveFolder() const {
  if (const QString last = last_folder(); !last.isEmpty()) return last;
  return QDir(documents_folder()).filePath(tr("Renaissance Projects"));
}

void MainWindow::rememberFolder(const QString& path) {
  // The samples' folder is where Open shows them, not where work is kept.
  if (isSample(path)) return;
  QSettings().setValue(QStringLiteral("files/lastFolder"), QFileInfo(path).absolutePath());
}

bool MainWindow::restoreSession(QString* error) {
  QSettings settings;
  const QString last = settings.value(QStringLiteral("session/project")).toString();
  const int view = settings.value(QStringLiteral("session/view"), 0).toInt();
  QString why;
  bool opened = false;
  if (!last.isEmpty() && QFileInfo(last).isFile()) {
    opened = openProject(last, &why);
    // Said, not hidden: the default project opens instead.
    if (!opened && error)
      *error = tr("The last project, %1, could not be opened: %2").arg(last, why);
  }
  if (!opened) {
    const QString def = defaultProjectPath();
    opened = def.isEmpty() ? newFromTemplate(project_templates().front().key, &why)
                           : openProject(def, &why);
    if (!opened && error) *error = why;
  }
  if (view >= 0 && view < tabs_->count()) tabs_->setCurrentIndex(view);
  return opened;
}

QString MainWindow::defaultProjectPath() {
  const QStringList candidates = {
      QStringLiteral(TR_SOURCE_DIR "/projects/") + kDefaultProject,
      QCoreApplication::applicationDirPath() + "/../share/renaissance/projects/" + kDefaultProject,
  };
  for (const QString& c : candidates)
    if (QFileInfo(c).isFile()) return QFileInfo(c).canonicalFilePath();
  return {};
}

QString MainWindow::workFolder() const {
  const QString file = doc_->filePath();
  if (!file.isEmpty() && !isSample(file)) return QFileInfo(file).absolutePath();
  return saveFolder();
}

ModelWeights MainWindow::modelWeights() const {
  QString store_path;
  try {
    store_path = QString::fromStdString(store::resolve_store_path());
  } catch (const std::exception&) {
    // No store to look in: the project's own weights, or the reason none are found.
  }
  return find_model_weights(doc_->project(), store_path);
}

void MainWindow::onExportOnnx() {
  // The weights Try the Model would use are chosen already; the model goes
  // beside the project (a run's weights live in the data folder).
  const ModelWeights weights = modelWeights();
  const QString checkpoint = QFileDialog::getOpenFileName(
      this,
      weights.path.isEmpty() ? tr("Export ONNX: the checkpoint with the weights")
                             : tr("Export ONNX: %1").arg(weights.origin),
      weights.path.isEmpty() ? workFolder() : weights.path,
      tr("Checkpoints (*.ckpt);;All files (*)"));
  if (checkpoint.isEmpty()) return;
  const QString name = QString::fromStdString(doc_->project().name) + QStringLiteral(".onnx");
  const QString out = QFileDialog::getSaveFileName(
      this, tr("Export ONNX"), QDir(workFolder()).filePath(name), tr("ONNX (*.onnx)"));
  if (out.isEmpty()) return;
  QString message;
  if (export_onnx_file(doc_->project(), checkpoint, out, &message))
    showStatus(message, 10000);
  else
    QMessageBox::warning(this, tr("Export ONNX"), message);
}

TryModelDialog* MainWindow::tryModel() {
  auto* d = new TryModelDialog(doc_->project(), modelWeights(), this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  d->show();
  return d;
}

void MainWindow::onImportOnnx() {
  if (!maybeSave()) return;
  const QString onnx = QFileDialog::getOpenFileName(this, tr("Import ONNX"), openFolder(),
                                                    tr("ONNX models (*.onnx);;All files (*)"));
  if (onnx.isEmpty()) return;
  const QFileInfo in(onnx);
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Import ONNX: the project to write (its weights go beside it)"),
      import_project_path(onnx), tr("Projects (*.json)"));
  if (path.isEmpty()) return;
  ImportedModel m;
  QString error;
  if (!import_onnx_file(onnx, path, &m, &error)) {
    QMessageBox::warning(this, tr("Import ONNX"), error);
    return;
  }
  if (!openProject(m.project, &error)) {
    QMessageBox::warning(this, tr("Import ONNX"), error);
    return;
  }
  QMessageBox::information(
      this, tr("Import ONNX"),
      m.summary + QStringLiteral(".\n\n- ") + m.notes.join(QStringLiteral("\n- ")) +
          tr("\n\nRun > Try the Model classifies images with these weights, and training "
             "starts from them (Start from weights in the Training settings: %1).")
              .arg(m.checkpoint));
}

QAction* MainWindow::action(const QString& name) const {
  return findChild<QAction*>(name);
}

void MainWindow::createActions() {
  auto make = [this](const char* name, const QString& text, const QList<QKeySequence>& keys,
                     auto slot) {
    auto* a = new QAction(text, this);
    a->setObjectName(QString::fromLatin1(name));
    a->setShortcuts(keys);
    connect(a, &QAction::triggered, this, slot);
    return a;
  };
  make("new", tr("&New"), {QKeySequence::New}, [this] { onNew(); });
  make("open", tr("&Open…"), {QKeySequence::Open}, [this] { onOpen(); });
  make("save", tr("&Save"), {QKeySequence::Save}, [this] { onSave(); });
  // Qt's generic desktop has no Save As keys; the common one then.
  QList<QKeySequence> saveAsKeys = QKeySequence::keyBindings(QKeySequence::SaveAs);
  if (saveAsKeys.isEmpty()) saveAsKeys << QKeySequence(tr("Ctrl+Shift+S"));
  make("saveAs", tr("Save &As…"), saveAsKeys, [this] { onSaveAs(); });
  make("exportOnnx", tr("Export &ONNX…"), {}, [this] { onExportOnnx(); });
  make("importOnnx", tr("&Import ONNX…"), {}, [this] { onImportOnnx(); });
  make("tryModel", tr("Try the &Model…"), {}, [this] { tryModel(); });
  make("quit", tr("&Quit"), {QKeySequence::Quit}, [this] { close(); });
  make("analyze", tr("&Analyze Network"), {QKeySequence(tr("Ctrl+Shift+A"))}, [this] {
    // The table is of the compiled design: compile what changed first.
    if (!memory_->compiled() || memory_->isStale()) compile();
    // The problems' height as it is alone, to give back on closing.
    const int alone =
        !analysisDock_->isVisible() && problemsDock_->isVisible() ? problemsDock_->height() : 0;
    analysisDock_->show();
    analysisDock_->raise();
    // The bottom docks are sized for a few problems; the table wants rows
    // (measured once the shown dock is laid out), as many as the views'
    // least height leaves: four at 1280x800.
    QTimer::singleShot(0, this, [this, alone] {
      const int rows = 8;
      const QTableView* table = analysis_->table();
      const int want = analysisDock_->height() - table->viewport()->height() +
                       rows * table->verticalHeader()->defaultSectionSize();
      if (analysisDock_->height() >= want) return;
      if (bottomBefore_ == 0) bottomBefore_ = alone;
      resizeDocks({analysisDock_}, {std::min(want, height() / 2)}, Qt::Vertical);
    });
  });
  make("compile", tr("&Compile"), {QKeySequence(Qt::Key_F5), QKeySequence(tr("Ctrl+B"))},
       [this] { onCompile(); });
  make("arrange", tr("&Arrange Layers"), {QKeySequence(tr("Ctrl+L"))},
       [this] { editor_->arrange(); });
  make("zoomIn", tr("Zoom &In"), {QKeySequence::ZoomIn, QKeySequence(tr("Ctrl+="))},
       [this] { designer_->zoomIn(); });
  make("zoomOut", tr("Zoom &Out"), {QKeySequence::ZoomOut}, [this] { designer_->zoomOut(); });
  make("zoomFit", tr("Zoom to &Fit"), {QKeySequence(tr("Ctrl+0"))},
       [this] { designer_->zoomToFit(); });
  make("zoomReset", tr("Actual &Size"), {QKeySequence(tr("Ctrl+1"))},
       [this] { designer_->resetZoom(); });
  int place = 0;
  for (const ViewInfo& v : kViews) {
    QAction* a = make(v.action, tr(v.menu), {QKeySequence(Qt::ALT | (Qt::Key_1 + place++))},
                      [this, view = v.view] { showView(view); });
    a->setStatusTip(tr(v.shows));
  }
  make("train", tr("&Train"), {QKeySequence(tr("Ctrl+R"))}, [this] {
    QString error;
    if (!train(&error)) QMessageBox::warning(this, tr("Cannot start training"), error);
  });
  make("pause", tr("&Pause"), {QKeySequence(Qt::Key_F8)}, [this] {
    if (training_->state() == TrainingController::State::Paused)
      training_->resume();
    else
      training_->pause();
    updateTrainingActions();
  });
  make("stop", tr("&Stop"), {QKeySequence(tr("Shift+F5"))}, [this] {
    training_->stop();
    updateTrainingActions();
  });

  // Canvas edits act only while the canvas has the focus, so Delete or
  // Ctrl+C in a text field keep their usual meaning.
  auto canvas = [&](const char* name, const QString& text, const QList<QKeySequence>& keys,
                    auto slot) {
    QAction* a = make(name, text, keys, slot);
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    designer_->addAction(a);
  };
  canvas("cut", tr("Cu&t"), {QKeySequence::Cut}, [this] { designer_->cutSelection(); });
  canvas("copy", tr("&Copy"), {QKeySequence::Copy}, [this] { designer_->copySelection(); });
  canvas("paste", tr("&Paste"), {QKeySequence::Paste}, [this] { designer_->paste(); });
  canvas("delete", tr("&Delete"), {QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)},
         [this] { designer_->deleteSelection(); });
  canvas("selectAll", tr("Select &All"), {QKeySequence::SelectAll},
         [this] { designer_->selectAllNodes(); });

  make("shortcuts", tr("&Keyboard Shortcuts"), {QKeySequence::HelpContents},
       [this] { showShortcuts(); });
  make("about", tr("&About Renaissance Workbench"), {}, [this] { showAbout(); });
  make("aboutQt", tr("About &Qt"), {}, [] { QApplication::aboutQt(); });

  QAction* undo = doc_->undoStack()->createUndoAction(this, tr("&Undo"));
  undo->setObjectName(QStringLiteral("undo"));
  undo->setShortcuts(QKeySequence::Undo);
  QAction* redo = doc_->undoStack()->createRedoAction(this, tr("&Redo"));
  redo->setObjectName(QStringLiteral("redo"));
  // Ctrl+Y besides the platform's own (Ctrl+Shift+Z here): both are habits.
  QList<QKeySequence> redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redoKeys.contains(QKeySequence(tr("Ctrl+Y")))) redoKeys << QKeySequence(tr("Ctrl+Y"));
  redo->setShortcuts(redoKeys);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(action("new"));
  QMenu* templates = file->addMenu(tr("New from &Template"));
  templates->setObjectName(QStringLiteral("templatesMenu"));
  for (const ProjectTemplate& t : project_templates()) {
    QAction* a = templates->addAction(t.title);
    a->setObjectName(QStringLiteral("template-") + t.key);
    const QString key = t.key;
    connect(a, &QAction::triggered, this, [this, key] { onTemplate(key); });
  }
  file->addAction(action("open"));
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  recentMenu_->setObjectName(QStringLiteral("recentMenu"));
  connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
  rebuildRecentMenu();
  file->addSeparator();
  file->addAction(action("save"));
  file->addAction(action("saveAs"));
  file->addAction(action("importOnnx"));
  file->addAction(action("exportOnnx"));
  file->addSeparator();
  file->addAction(action("quit"));

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(action("undo"));
  edit->addAction(action("redo"));
  edit->addSeparator();
  for (const char* name : {"cut", "copy", "paste", "delete"}) edit->addAction(action(name));
  edit->addSeparator();
  edit->addAction(action("selectAll"));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->setObjectName(QStringLiteral("viewMenu"));
  for (const ViewInfo& v : kViews) view->addAction(action(QString::fromLatin1(v.action)));
  view->addSeparator();
  for (const char* name : {"zoomIn", "zoomOut", "zoomFit", "zoomReset", "arrange"})
    view->addAction(action(name));
  view->addSeparator();
  QMenu* themes = view->addMenu(tr("T&heme"));
  themes->setObjectName(QStringLiteral("themeMenu"));
  auto* group = new QActionGroup(themes);
  const std::pair<Theme, QString> choices[] = {{Theme::System, tr("&System (follow the desktop)")},
                                               {Theme::Light, tr("&Light")},
                                               {Theme::Dark, tr("&Dark")}};
  for (const auto& [theme, text] : choices) {
    QAction* a = themes->addAction(text);
    a->setObjectName(QStringLiteral("theme-") + theme_key(theme));
    a->setCheckable(true);
    a->setChecked(theme == current_theme());
    group->addAction(a);
    const Theme t = theme;
    connect(a, &QAction::triggered, this, [t] {
      apply_theme(t);
      QSettings().setValue(QStringLiteral("view/theme"), theme_key(t));
    });
  }
  view->addSeparator();

  QMenu* build = menuBar()->addMenu(tr("&Build"));
  build->addAction(action("compile"));
  build->addAction(action("analyze"));
  QMenu* run = menuBar()->addMenu(tr("&Run"));
  for (const char* name : {"train", "pause", "stop"}) run->addAction(action(name));
  run->addSeparator();
  run->addAction(action("tryModel"));

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->setObjectName(QStringLiteral("helpMenu"));
  help->addAction(action("shortcuts"));
  help->addSeparator();
  help->addAction(action("about"));
  help->addAction(action("aboutQt"));
}

void MainWindow::showShortcuts() {
  // Built from the actions themselves, so it never disagrees with them.
  QDialog dialog(this);
  dialog.setObjectName(QStringLiteral("shortcutsDialog"));
  dialog.setWindowTitle(tr("Keyboard shortcuts"));
  auto* table = new QTreeWidget(&dialog);
  table->setObjectName(QStringLiteral("shortcutsTable"));
  table->setRootIsDecorated(false);
  table->setHeaderLabels({tr("Menu"), tr("Command"), tr("Keys")});
  for (QMenu* menu : menuBar()->findChildren<QMenu*>(QString(), Qt::FindDirectChildrenOnly)) {
    const QString menuName = menu->title().remove(QLatin1Char('&'));
    for (QAction* a : menu->actions()) {
      if (a->shortcuts().isEmpty()) continue;
      QStringList keys;
      for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
      auto* item = new QTreeWidgetItem(table);
      item->setText(0, menuName);
      item->setText(1, a->text().remove(QLatin1Char('&')).remove(QStringLiteral("…")));
      item->setText(2, keys.join(QStringLiteral(", ")));
    }
  }
  for (int c = 0; c < 3; ++c) table->resizeColumnToContents(c);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dialog);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  auto* layout = new QVBoxLayout(&dialog);
  layout->addWidget(table);
  layout->addWidget(buttons);
  dialog.resize(560, 520);
  dialog.exec();
}

void MainWindow::showAbout() {
  QMessageBox::about(
      this, tr("About Renaissance Workbench"),
      tr("<h3>Renaissance Workbench %1</h3>"
         "<p>Design convolutional networks, compile them into a static memory plan, and train "
         "them on captured multi-stream graphs, on the CPU or on CUDA GPUs.</p>"
         "<p>CUDA devices here: %2</p>"
         "<p>Licence: GPL-3.0-or-later. QCustomPlot (GPL-3.0) draws the plots; Qt %3 "
         "the rest.</p>")
          .arg(QStringLiteral(TR_VERSION),
               scan_.cuda.empty() ? QString::fromStdString(scan_.cuda_status).toHtmlEscaped()
                                  : QString::number(scan_.cuda.size()),
               QString::fromLatin1(qVersion())));
}

void MainWindow::createToolBar() {
  QToolBar* bar = addToolBar(tr("Main"));
  bar->setObjectName(QStringLiteral("mainToolBar"));
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  for (const char* name : {"new", "open", "save"}) bar->addAction(action(name));
  bar->addSeparator();
  // The menu's Undo says what it undoes; the toolbar's keeps one short text
  // (the step in its tooltip), so the buttons after it never shift.
  for (const bool isUndo : {true, false}) {
    QAction* menuAction = action(isUndo ? "undo" : "redo");
    auto* a = new QAction(isUndo ? tr("Undo") : tr("Redo"), bar);
    a->setObjectName(isUndo ? QStringLiteral("undoTool") : QStringLiteral("redoTool"));
    auto follow = [a, menuAction] {
      a->setEnabled(menuAction->isEnabled());
      a->setToolTip(
          QStringLiteral("%1 (%2)").arg(menuAction->text().remove(QLatin1Char('&')),
                                        menuAction->shortcut().toString(QKeySequence::NativeText)));
    };
    connect(menuAction, &QAction::changed, a, follow);
    connect(a, &QAction::triggered, menuAction, &QAction::trigger);
    follow();
    bar->addAction(a);
  }
  bar->addSeparator();
  bar->addAction(action("compile"));
  bar->addSeparator();
  for (const char* name : {"train", "pause", "stop"}) bar->addAction(action(name));
  // Pause becomes Resume: the button keeps the wider text's width, so Stop
  // and the device choice never move under the pointer.
  if (QWidget* pause = bar->widgetForAction(action("pause"))) {
    const QFontMetrics fm = pause->fontMetrics();
    const int grow = fm.horizontalAdvance(tr("Resume")) - fm.horizontalAdvance(tr("Pause"));
    pause->setMinimumWidth(pause->sizeHint().width() + std::max(0, grow));
  }
  bar->addSeparator();
  bar->addWidget(new QLabel(tr("Devices "), bar));
  bar->addWidget(devices_);
}

void MainWindow::createDocks() {
  auto dock = [this](const char* name, const QString& title, QWidget* content,
                     Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(QString::fromLatin1(name));
    d->setWidget(content);
    addDockWidget(area, d);
    menuBar()->findChild<QMenu*>(QStringLiteral("viewMenu"))->addAction(d->toggleViewAction());
    return d;
  };
  paletteDock_ = dock("paletteDock", tr("Layers"), palette_, Qt::LeftDockWidgetArea);
  propertiesDock_ = dock("propertiesDock", tr("Properties"), properties_, Qt::RightDockWidgetArea);
  problemsDock_ = dock("problemsDock", tr("Problems"), problems_, Qt::BottomDockWidgetArea);
  settingsDock_ = dock("settingsDock", tr("Training settings"), settings_, Qt::RightDockWidgetArea);
  analysisDock_ = dock("analysisDock", tr("Network analysis"), analysis_, Qt::BottomDockWidgetArea);
  // Under the views beside the problems, one tab each, once shown (View
  // menu, Build > Analyze Network): the views keep its tab bar's height.
  tabifyDockWidget(problemsDock_, analysisDock_);
  analysisDock_->hide();
  problemsDock_->raise();
  // Closed again, it gives the views back the height Analyze took.
  connect(analysisDock_->toggleViewAction(), &QAction::toggled, this, [this](bool shown) {
    if (shown || bottomBefore_ == 0) return;
    resizeDocks({problemsDock_}, {bottomBefore_}, Qt::Vertical);
    bottomBefore_ = 0;
  });
  // The settings share the right side with the node properties, one tab each.
  tabifyDockWidget(propertiesDock_, settingsDock_);
  propertiesDock_->raise();
  // At 1280x800 the views keep about 800 pixels; an empty problems list
  // takes a few rows, not a fifth of the height.
  resizeDocks({paletteDock_, propertiesDock_},
              {palette_->minimumWidth(), std::max(300, settings_->minimumWidth())}, Qt::Horizontal);
  resizeDocks({problemsDock_}, {96}, Qt::Vertical);
}

namespace {

// What a window manager's frame and title bar take, at most, before the
// window has been shown and its frame is known.
const QSize kFirstFrame(16, 40);

}  // namespace

void MainWindow::restoreLayout() {
  QSettings settings;
  const QByteArray geometry = settings.value(QStringLiteral("window/geometry")).toByteArray();
  if (geometry.isEmpty() || !restoreGeometry(geometry)) {
    // The first start: 1400x900 where the screen has room, else what it
    // has, so the status bar and the docks' bottoms are not off screen.
    const QRect room = screen()->availableGeometry();
    const QSize size = QSize(1400, 900).boundedTo(room.size() - kFirstFrame);
    resize(size);
    move(room.topLeft() + QPoint((room.width() - size.width()) / 2,
                                 (room.height() - size.height() - kFirstFrame.height()) / 2));
  }
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray(), kLayoutVersion);
}

void MainWindow::saveLayout() {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState(kLayoutVersion));
  // The project to open next time: its file, or the sample it came from.
  const QString project = doc_->filePath().isEmpty() ? doc_->samplePath() : doc_->filePath();
  if (project.isEmpty())
    settings.remove(QStringLiteral("session/project"));
  else
    settings.setValue(QStringLiteral("session/project"), project);
  settings.setValue(QStringLiteral("session/view"), tabs_->currentIndex());
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  if (training_->isRunning()) {
    const auto answer = QMessageBox::question(
        this, tr("Training is running"),
        tr("Stop the training run and close? It is recorded as stopped, with a checkpoint if a "
           "checkpoint folder is set."),
        QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
    if (answer != QMessageBox::Yes) {
      event->ignore();
      return;
    }
    training_->stop();  // the view waits for the run as it closes
  }
  saveLayout();
  event->accept();
}

// The tabs are in the order of View.
std::span<const MainWindow::ViewInfo> MainWindow::views() {
  return kViews;
}

void MainWindow::showView(View view) {
  tabs_->setCurrentWidget(view_info(view).widget(*this));
}

MainWindow::View MainWindow::currentView() const {
  for (const ViewInfo& v : kViews)
    if (v.widget(*this) == tabs_->currentWidget()) return v.view;
  return kViews[0].view;
}

namespace {

// A status message elided to the room left of the layer/parameter counter.
QString status_shown(const QStatusBar* bar, const QWidget* counter, const QString& text) {
  const int room = bar->width() - counter->width() - 32;
  return bar->fontMetrics().elidedText(text, Qt::ElideRight, std::max(80, room));
}

}  // namespace

void MainWindow::showStatus(const QString& text, int timeout_ms) {
  // Elided so the message and the counter never overlap; the whole message
  // is the status bar's tooltip.
  statusText_ = text;
  statusTimeout_ = timeout_ms;
  statusShown_ = status_shown(statusBar(), summary_, text);
  statusBar()->setToolTip(statusShown_ == text ? QString() : text);
  statusBar()->showMessage(statusShown_, timeout_ms);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == statusBar() && event->type() == QEvent::Resize && !statusText_.isEmpty()) {
    // Still showing (not timed out, not replaced) and no longer the right fit.
    const QString now = statusBar()->currentMessage();
    if (!now.isEmpty() && now == statusShown_ &&
        status_shown(statusBar(), summary_, statusText_) != now)
      showStatus(statusText_, statusTimeout_);
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::updateTitle() {
  setWindowTitle(tr("%1[*] — Renaissance Workbench").arg(doc_->displayName()));
  setWindowModified(doc_->isModified());
}

void MainWindow::updateStatusSummary() {
  const ModelAnalysis& a = doc_->analysis();
  summary_->setText(
      tr("%1 · %2 parameters · %3")
          .arg(count_text(static_cast<qint64>(doc_->project().model.nodes.size()), tr("%1 layer"),
                          tr("%1 layers")),
               grouped_number(a.total_params),
               // What the Problems panel lists: the design's, the
               // compiler's and training's.
               count_text(problems_->problemCount(), tr("%1 problem"), tr("%1 problems"))));
}

void MainWindow::designChanged() {
  memory_->setStale(true);
  analysis_->setStale(true);
  problems_->setCompileProblems({});
  training_->setProject(doc_->project());
  readinessTimer_->start();
  updateTrainingActions();
}

const TrainingReadiness& MainWindow::checkReadiness() {
  readinessTimer_->stop();
  std::shared_ptr<const CompiledPlan> plan;
  if (doc_->analysis().ok()) plan = compileDesign(nullptr);
  Project project = doc_->project();
  const DatasetProbe probe = probe_dataset(project.dataset);
  settle_dataset_sizes(project, probe);  // image folders: checked for what they hold
  readiness_ = check_training_readiness(project, probe, plan.get(), scan_);
  problems_->setTrainingProblems(readiness_.blocking, readiness_.notes);
  updateTrainingActions();
  return readiness_;
}

QString MainWindow::trainBlockedReason() const {
  if (doc_->project().model.nodes.empty())
    return tr("The design is empty: add layers from the palette, or open a project");
  if (!doc_->analysis().ok() || problems_->blockingCount() > 0)
    return count_text(std::max<int>(1, problems_->blockingCount()),
                      tr("%1 problem blocks training: see the Problems panel"),
                      tr("%1 problems block training: see the Problems panel"));
  return {};
}

void MainWindow::selectionChanged(int node) {
  const Project& p = doc_->project();
  memory_->highlightLayers(memory_->isStale() ? QList<int>{}
                                              : layers_in(memory_->compiled(), p, node));
  timeline_->highlightLayers(layers_in(timeline_->compiled(), p, node));
}

void MainWindow::requestLayer(const CompiledPlan* cp, int layer) {
  if (!cp || layer < 0 || static_cast<size_t>(layer) >= cp->project().model.nodes.size()) return;
  const std::string& id = cp->project().model.nodes[static_cast<size_t>(layer)].design_id();
  if (node_index(doc_->project(), id) < 0) {
    showStatus(tr("Layer %1 is no longer in the design").arg(QString::fromStdString(id)), 8000);
    return;
  }
  showView(View::Design);
  designer_->focusNode(QString::fromStdString(id));
  // The layer's properties, not whatever the right dock showed before.
  propertiesDock_->show();
  propertiesDock_->raise();
}

void MainWindow::updateTrainingActions() {
  const bool running = training_->isRunning();
  const auto state = training_->state();
  const QString blocked = trainBlockedReason();
  action("train")->setEnabled(!running && blocked.isEmpty());
  action("train")->setToolTip(blocked.isEmpty() ? tr("Train the project (Ctrl+R)") : blocked);
  training_->setTrainBlocked(blocked);
  action("pause")->setEnabled(training_->canPauseOrResume());
  action("pause")->setText(state == TrainingController::State::Paused ? tr("&Resume")
                                                                      : tr("&Pause"));
  action("stop")->setEnabled(training_->canStop());
}

bool MainWindow::train(QString* error) {
  settings_->commitPendingEdits();  // a value still being typed counts
  checkReadiness();
  if (const QString why = trainBlockedReason(); !why.isEmpty()) {
    if (error) *error = why;
    problemsDock_->show();
    problemsDock_->raise();
    return false;
  }
  QString why;
  if (!training_->start(doc_->project(), training_->requestFromControls(), &why)) {
    if (error) *error = why;
    return false;
  }
  showView(View::Training);
  updateTrainingActions();
  return true;
}

bool MainWindow::resumeRun(qint64 id, QString* error) {
  QString why;
  Project project;
  TrainingRequest request;
  QString store_path;
  try {
    store_path = QString::fromStdString(store::resolve_store_path());
  } catch (const std::exception& e) {
    why = QString::fromStdString(e.what());
  }
  if (why.isEmpty() && training_->isRunning())
    why = tr("A training run is in progress; stop it first.");
  if (why.isEmpty() && resume_request(store_path, id, &project, &request, &why) &&
      training_->start(project, request, &why)) {
    showView(View::Training);
    updateTrainingActions();
    return true;
  }
  if (error) *error = why;
  return false;
}

void MainWindow::afterLoad() {
  const ModelGraph& g = doc_->project().model;
  const bool placed = std::all_of(g.nodes.begin(), g.nodes.end(),
                                  [](const LayerNode& n) { return n.has_position; });
  // Positions are optional in the file; a file without them is laid out once.
  if (!placed) doc_->setPositions(auto_layout(g));
  devices_->showDevices(doc_->project().training.devices);
  problems_->setCompileProblems({});
  loadedName_ = doc_->project().name;
  statusBar()->clearMessage();  // nothing said about the previous project holds
  memory_->setCompiled(nullptr, scan_);
  analysis_->setCompiled(nullptr);
  training_->setProject(doc_->project());
  training_->clearRun();
  // A profile of another project's run would name layers this one lacks.
  if (!training_->isRunning()) timeline_->clear();
  // compile() checks the readiness on success; a design that does not
  // compile is checked here (its dataset still counts).
  if (!doc_->analysis().ok() || !compile()) checkReadiness();
  updateTitle();
  designer_->showOverview();
  // The view may not have its final size before the event loop runs.
  QTimer::singleShot(0, designer_, &DesignerView::showOverview);
}

void MainWindow::newProject() {
  doc_->reset(parse_project(kEmptyProject, "new project"), QString());
  afterLoad();
}

bool MainWindow::openProject(const QString& path, QString* error) {
  const QString absolute = QFileInfo(path).absoluteFilePath();
  try {
    Project p = load_project(path.toStdString());
    if (isSample(absolute))
      doc_->reset(std::move(p), QString(), absolute);
    else
      doc_->reset(std::move(p), absolute);
  } catch (const std::exception& e) {
    // ProjectError lists every problem with file, node and field; UsageError
    // says why the file could not be read.
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  addRecent(absolute);
  rememberFolder(absolute);
  afterLoad();
  return true;
}

bool MainWindow::newFromTemplate(const QString& key, QString* error) {
  for (const ProjectTemplate& t : project_templates()) {
    if (t.key != key) continue;
    try {
      doc_->reset(load_template(t), QString());
    } catch (const std::exception& e) {
      if (error) *error = QString::fromStdString(e.what());
      return false;
    }
    afterLoad();
    return true;
  }
  if (error) *error = tr("There is no template called '%1'").arg(key);
  return false;
}

bool MainWindow::saveProjectAs(const QString& path, QString* error) {
  settings_->commitPendingEdits();  // a value still being typed is saved too
  const QString absolute = QFileInfo(path).absoluteFilePath();
  // A project is called after its file unless the user named it otherwise:
  // an untitled one, a template or sample saved under a new name, or a file
  // renamed by Save As takes the new file's name (one undoable step).
  const std::string stem = QFileInfo(absolute).completeBaseName().toStdString();
  const std::string name = doc_->project().name;
  const bool named_by_file =
      doc_->filePath().isEmpty()
          ? name == loadedName_
          : name == QFileInfo(doc_->filePath()).completeBaseName().toStdString();
  ProjectSettings before = doc_->settings();
  const bool rename = !stem.empty() && name != stem && named_by_file;
  if (rename) {
    ProjectSettings after = before;
    after.name = stem;
    doc_->undoStack()->push(new SetTrainingCommand(doc_, before, after, QStringLiteral("name"),
                                                   tr("name after the file")));
  }
  try {
    save_project(doc_->project(), path.toStdString());
  } catch (const std::exception& e) {
    if (rename) doc_->undoStack()->undo();  // nothing was saved: nothing renamed either
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  doc_->markSaved(absolute);
  loadedName_ = doc_->project().name;
  addRecent(absolute);
  rememberFolder(absolute);
  updateTitle();
  return true;
}

bool MainWindow::compile(QString* error) {
  scan_ = scan_devices();  // available memory now, not at start-up
  std::shared_ptr<const CompiledPlan> cp = compileDesign(error);
  if (!cp) {
    showStatus(error ? *error : tr("Compile failed"), 8000);
    problemsDock_->show();
    problemsDock_->raise();
    return false;
  }
  memory_->setCompiled(cp, scan_);
  analysis_->setCompiled(cp);
  designer_->designerScene()->setTensorSplits(tensor_splits(*cp));
  // The layer selected in the designer stays marked in the new plan.
  selectionChanged(designer_->designerScene()->currentNode());
  showStatus(tr("Compiled: %1 per device, %2")
                 .arg(QString::fromStdString(human_bytes(cp->bytes_per_device())),
                      count_text(static_cast<qint64>(cp->plans().size()), tr("%1 variant"),
                                 tr("%1 variants"))),
             8000);
  checkReadiness();
  return true;
}

std::shared_ptr<const CompiledPlan> MainWindow::compileDesign(QString* error) {
  if (memory_->compiled() && !memory_->isStale()) return memory_->plan();
  try {
    // Image folders: compiled for the images they hold now.
    Project project = doc_->project();
    settle_dataset_sizes(project, probe_dataset(project.dataset));
    CompileOptions options;
    options.channel_block = feature_channel_block(project);
    auto cp = std::make_shared<const CompiledPlan>(compile_plan(project, options));
    problems_->setCompileProblems({});
    return cp;
  } catch (const ProjectError& e) {
    // The design problems are listed already; add what only the compiler saw.
    std::vector<Diagnostic> extra;
    for (const Diagnostic& d : e.diagnostics()) {
      const bool known = std::any_of(
          doc_->analysis().problems.begin(), doc_->analysis().problems.end(),
          [&](const Diagnostic& p) { return p.node_id == d.node_id && p.message == d.message; });
      if (!known) extra.push_back(d);
    }
    problems_->setCompileProblems(extra);
    if (error)
      *error = count_text(static_cast<qint64>(e.diagnostics().size()),
                          tr("Compile failed: %1 problem, listed in the Problems panel"),
                          tr("Compile failed: %1 problems, listed in the Problems panel"));
  } catch (const std::exception& e) {
    Diagnostic d;
    d.message = e.what();
    problems_->setCompileProblems({d});
    if (error) *error = tr("Compile failed: %1").arg(QString::fromStdString(e.what()));
  }
  return nullptr;
}

bool MainWindow::writeScreenshots(const QString& dir, QString* error, int train_steps) {
  const QFileInfo info(dir);
  if (info.exists() && !info.isDir()) {
    if (error)
      *error = tr("'%1' exists and is not a folder; give a folder for the screenshots").arg(dir);
    return false;
  }
  if (!QDir().mkpath(dir)) {
    if (error) *error = tr("Cannot create the screenshot folder '%1'").arg(dir);
    return false;
  }
  if (!memory_->compiled() || memory_->isStale()) compile();
  if (!isVisible()) show();
  if (training_->lastRunId() <= 0 && train_steps > 0 && !training_->isRunning()) {
    // A short profiled run, so the training, timeline and runs views show it.
    TrainingRequest request = training_->requestFromControls();
    request.max_steps = train_steps;
    request.validate = true;  // the run ends validated: the confusion matrix shows too
    request.profile_begin = std::min<int64_t>(2, train_steps - 1);
    request.profile_end = std::min<int64_t>(4, train_steps);
    QString why;
    if (!training_->start(doc_->project(), request, &why)) {
      if (error) *error = tr("Cannot train for the screenshots: %1").arg(why);
      return false;
    }
    QElapsedTimer waited;
    waited.start();
    while (training_->isRunning()) {
      QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
      if (waited.elapsed() > 600'000) {
        training_->stop();
        if (error) *error = tr("Training for the screenshots took over 10 minutes; stopped it");
        return false;
      }
    }
    if (!training_->errorText().isEmpty()) {
      if (error) *error = tr("Training for the screenshots failed: %1").arg(training_->errorText());
      return false;
    }
    QCoreApplication::processEvents();
  }
  if (const int node = designer_->designerScene()->currentNode(); node < 0) {
    // Something to show linked: the first layer with weights, selected.
    const auto& nodes = doc_->project().model.nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].type == LayerType::Conv2d || nodes[i].type == LayerType::Linear) {
        designer_->focusNode(QString::fromStdString(nodes[i].id));
        break;
      }
  }
  const View before = currentView();
  for (const ViewInfo& v : kViews) {
    showView(v.view);
    if (v.pose) v.pose(*this);
    QCoreApplication::processEvents();
    const QString path = QDir(dir).filePath(QString::fromLatin1(v.screenshot));
    const bool saved = grab().save(path, "PNG");
    if (!saved) {
      if (error) *error = tr("Cannot write '%1'; is the folder writable?").arg(path);
      showView(before);
      return false;
    }
  }
  showView(before);
  return true;
}

bool MainWindow::maybeSave() {
  if (!doc_->isModified()) return true;
  const bool sample = !doc_->samplePath().isEmpty();
  QMessageBox box(
      QMessageBox::Warning, tr("Unsaved changes"),
      sample ? tr("%1 has changes. A sample is never overwritten: save them as a new "
                  "project first?")
                   .arg(doc_->displayName())
             : tr("%1 has changes that are not saved. Save them first?").arg(doc_->displayName()),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
  box.setObjectName(QStringLiteral("unsavedChanges"));
  if (sample) box.button(QMessageBox::Save)->setText(tr("Save As…"));
  box.setDefaultButton(QMessageBox::Save);
  const int answer = box.exec();
  if (answer == QMessageBox::Save) return onSave();
  return answer == QMessageBox::Discard;
}

void MainWindow::onNew() {
  if (maybeSave()) newProject();
}

void MainWindow::onOpen() {
  if (!maybeSave()) return;
  QFileDialog dialog(this, tr("Open project"), openFolder(), tr("Projects (*.json)"));
  dialog.setObjectName(QStringLiteral("openDialog"));
  dialog.setFileMode(QFileDialog::ExistingFile);
  dialog.setAcceptMode(QFileDialog::AcceptOpen);
  // The samples are one click away, not where every Open starts.
  if (const QString samples = samplesFolder(); !samples.isEmpty()) {
    QList<QUrl> places = dialog.sidebarUrls();
    places << QUrl::fromLocalFile(samples);
    dialog.setSidebarUrls(places);
  }
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return;
  const QString path = dialog.selectedFiles().front();
  QString error;
  if (!openProject(path, &error)) QMessageBox::warning(this, tr("Cannot open the project"), error);
}

bool MainWindow::onSave() {
  if (doc_->filePath().isEmpty()) return onSaveAs();
  QString error;
  if (saveProjectAs(doc_->filePath(), &error)) {
    showStatus(tr("Saved %1").arg(doc_->filePath()), 5000);
    return true;
  }
  QMessageBox::warning(this, tr("Cannot save the project"), error);
  return false;
}

bool MainWindow::onSaveAs() {
  QString start = doc_->filePath();
  if (start.isEmpty()) {
    const QString folder = saveFolder();
    QDir().mkpath(folder);  // the projects folder, the first time
    start = QDir(folder).filePath(QString::fromStdString(doc_->project().name) + ".json");
  }
  QString path =
      QFileDialog::getSaveFileName(this, tr("Save project"), start, tr("Projects (*.json)"));
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
  QString error;
  if (saveProjectAs(path, &error)) {
    showStatus(tr("Saved %1").arg(path), 5000);
    return true;
  }
  QMessageBox::warning(this, tr("Cannot save the project"), error);
  return false;
}

void MainWindow::onTemplate(const QString& key) {
  if (!maybeSave()) return;
  QString error;
  if (!newFromTemplate(key, &error))
    QMessageBox::warning(this, tr("Cannot open the template"), error);
}

void MainWindow::onCompile() {
  if (compile()) showView(View::Memory);
}

}  // namespace tr::gui

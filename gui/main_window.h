// SPDX-License-Identifier: GPL-3.0-or-later
// MainWindow: the workbench. Views are central tabs (Design, Memory,
// Timeline, Training, Runs), with dockable palette, properties and problems
// panels, a toolbar for files, undo, compile, train/pause/stop and the
// device choice, and a window layout that is remembered between runs. It
// links the views: a designer selection highlights the node's tensors and
// ops, a timeline bar or memory owner selects its node, a finished run shows
// up in the runs view.
#pragma once

#include <QMainWindow>
#include <memory>
#include <span>

#include <renaissance/compiled_plan.h>
#include <renaissance/devices.h>
#include "predict/model_weights.h"
#include "training_readiness.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QTabWidget;
class QTimer;

namespace tr::gui {

class DatasetView;
class DesignerView;
class DeviceSelector;
class MemoryView;
class NetworkAnalysisPanel;
class ModelEditor;
class PaletteWidget;
class ProblemsPanel;
class ProjectDocument;
class PropertiesPanel;
class RunsView;
class TimelineView;
class TrainingSettingsPanel;
class TrainingView;
class TryModelDialog;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  enum class View { Design, Memory, Timeline, Training, Runs, Data };

  // The views, one row each in their tabs' order: a new view is its widget,
  // its enum value and its row.
  struct ViewInfo {
    View view;
    const char* action;      // "viewDesign"; its key is Alt and its place (Alt+1)
    const char* title;       // the tab's (translated in the MainWindow context): "Design"
    const char* menu;        // View menu's: "&Design"
    const char* screenshot;  // --screenshots' file: "designer.png"
    const char* shows;       // what it shows: the tab's tooltip
    QWidget* (*widget)(const MainWindow&);
    // Before its screenshot: what it should show in a picture of it (may be null).
    void (*pose)(MainWindow&);
  };
  static std::span<const ViewInfo> views();

  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // The project the workbench opens with: projects/lenet-fashion.json of the
  // source tree or of the installation; empty when neither exists.
  static QString defaultProjectPath();
  // The folder of the shipped sample projects; a project opened from it is a
  // sample: it opens without a file of its own, so Save asks where to put it.
  static QString samplesFolder();
  static bool isSample(const QString& path);

  // Opens the project and view of the last session (remembered on closing),
  // else the default project; false when neither could be opened.
  bool restoreSession(QString* error);
  // Most recent first; at most kMaxRecent, files that vanished included
  // until they are tried.
  static constexpr int kMaxRecent = 10;
  QStringList recentFiles() const;

  // Without dialogs: false with `error` saying what was wrong (the current
  // project stays as it was).
  bool openProject(const QString& path, QString* error);
  bool saveProjectAs(const QString& path, QString* error);
  bool newFromTemplate(const QString& key, QString* error);
  void newProject();
  // Compiles the design into the memory view; false (problems listed) on failure.
  bool compile(QString* error = nullptr);
  // Brings the training problems (dataset, batch, memory fit) up to date
  // now instead of shortly after the last edit; what Train and its
  // enabled state follow.
  const TrainingReadiness& checkReadiness();
  // Starts training the current design with the Training view's settings;
  // false (nothing started) with `error` saying why.
  bool train(QString* error = nullptr);
  // Continues the recorded run `id` (stopped, interrupted or failed) from its
  // latest checkpoint as the same run, in the Training view; false with
  // `error` saying why, and nothing started.
  bool resumeRun(qint64 id, QString* error = nullptr);
  // Writes one PNG per view into `dir` (created if missing). When nothing
  // has been trained in this window yet, first trains the design for
  // `train_steps` steps (profiled), so every view has something to show.
  bool writeScreenshots(const QString& dir, QString* error, int train_steps = 40);

  void showView(View view);
  View currentView() const;
  // Run > Try the Model: the dialog, opened on the newest run's final
  // weights (or the project's starting weights), saying which or why none.
  TryModelDialog* tryModel();

  ProjectDocument* document() const { return doc_; }
  ModelEditor* editor() const { return editor_; }
  DesignerView* designer() const { return designer_; }
  MemoryView* memoryView() const { return memory_; }
  TimelineView* timelineView() const { return timeline_; }
  TrainingView* trainingView() const { return training_; }
  RunsView* runsView() const { return runs_; }
  DatasetView* datasetView() const { return data_; }
  PaletteWidget* palette() const { return palette_; }
  PropertiesPanel* properties() const { return properties_; }
  ProblemsPanel* problems() const { return problems_; }
  NetworkAnalysisPanel* networkAnalysis() const { return analysis_; }
  TrainingSettingsPanel* settingsPanel() const { return settings_; }
  DeviceSelector* deviceSelector() const { return devices_; }
  QTabWidget* tabs() const { return tabs_; }
  // Actions by object name ("compile", "save", "undo"...), for tests.
  QAction* action(const QString& name) const;

  // Where File > Open starts: the folder last worked in; before there is
  // one, with a sample open, the samples (what a new user opens next), else
  // Documents.
  QString openFolder() const;
  // Where Save As starts for a project without a file of its own (a sample,
  // a template, a new one): the folder last worked in, else the user's
  // projects folder (Documents/Renaissance Projects, made when saving);
  // never the samples' folder, where a copy would count as a sample.
  QString saveFolder() const;
  // Where what is made from the open project goes (File > Export ONNX):
  // its own folder, else saveFolder() (a sample, a new project).
  QString workFolder() const;
  // The weights Run > Try the Model and File > Export ONNX start with: the
  // newest run's final weights, else the project's starting weights; with no
  // path, why there are none.
  ModelWeights modelWeights() const;

 protected:
  void closeEvent(QCloseEvent* event) override;
  // The status bar's message is elided again when the bar is resized (a
  // message shown while the window was still being laid out, shortened to
  // its width then, shows whole once there is room).
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void createActions();
  void onExportOnnx();
  void onImportOnnx();
  void createMenus();
  void rebuildRecentMenu();
  void addRecent(const QString& path);
  void forgetRecent(const QString& path);
  void rememberFolder(const QString& path);
  void showShortcuts();
  void showAbout();
  void createToolBar();
  void createDocks();
  void restoreLayout();
  void saveLayout();
  void updateTitle();
  // A status-bar message that never runs under the counter on its right.
  void showStatus(const QString& text, int timeout_ms = 0);
  void updateStatusSummary();
  void designChanged();
  void selectionChanged(int node);
  // Selects, in the designer, the node a compiled project's layer index names.
  void requestLayer(const CompiledPlan* cp, int layer);
  void updateTrainingActions();
  // The design compiled as it is now, or null with the compiler's problems
  // listed; the memory view's plan when that is current.
  std::shared_ptr<const CompiledPlan> compileDesign(QString* error);
  // Why Train would be refused now; empty when it would start.
  QString trainBlockedReason() const;
  void afterLoad();
  bool maybeSave();

  // Interactive versions of the above, with dialogs.
  void onNew();
  void onOpen();
  bool onSave();
  bool onSaveAs();
  void onTemplate(const QString& key);
  void onCompile();

  ProjectDocument* doc_;
  ModelEditor* editor_;
  DeviceScan scan_;
  QTabWidget* tabs_;
  DesignerView* designer_;
  MemoryView* memory_;
  TimelineView* timeline_;
  TrainingView* training_;
  RunsView* runs_;
  DatasetView* data_;
  PaletteWidget* palette_;
  PropertiesPanel* properties_;
  ProblemsPanel* problems_;
  NetworkAnalysisPanel* analysis_;
  TrainingSettingsPanel* settings_;
  DeviceSelector* devices_;
  QDockWidget *paletteDock_ = nullptr, *propertiesDock_ = nullptr, *problemsDock_ = nullptr,
              *settingsDock_ = nullptr, *analysisDock_ = nullptr;
  QLabel* summary_;
  // The bottom docks' height before Analyze Network grew them; 0: not grown.
  int bottomBefore_ = 0;
  // The last showStatus message: whole, as shown, and its timeout.
  QString statusText_, statusShown_;
  int statusTimeout_ = 0;
  QTimer* readinessTimer_;  // re-checks readiness shortly after the last edit
  QMenu* recentMenu_ = nullptr;
  // The project's name when it was opened: Save As names the project after
  // its new file unless the user renamed it since.
  std::string loadedName_;
  TrainingReadiness readiness_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// RunsView: every run in the run store (from the workbench and the CLI
// alike) in a sortable table, filtered as `runs list --filter` filters;
// tags, notes, CSV export and deletion for the selected runs; their curves
// overlaid, their configurations compared, and one run's details. It polls
// the store while visible, so runs recorded elsewhere show up on their own.
#pragma once

#include <QList>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>

#include <renaissance/run_store.h>
#include "runs/run_curves.h"

class QAction;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QSplitter;
class QTabWidget;
class QTableView;
class QTextBrowser;
class QTimer;

namespace tr::gui {

class ConfigDiffModel;
class ConfigDiffView;
class RunOverlay;
class RunsTableModel;

class RunsView : public QWidget {
  Q_OBJECT

 public:
  // Uses the store resolve_store_path() names; opens it when first shown.
  explicit RunsView(QWidget* parent = nullptr);
  ~RunsView() override;

  // Opens this store now (creating it when the path does not exist).
  void setStorePath(const QString& path);
  QString storePath() const { return storePath_; }
  // Why the store could not be opened or read; empty when it could.
  QString errorText() const { return error_; }

  // The store's filter: runs whose name, status, devices, precision, git
  // commit, a tag or a note contain the text (case-insensitive).
  void setFilterText(const QString& text);
  QString filterText() const;

  // Selected run ids, ascending.
  QList<qint64> selectedRuns() const;
  // Selects the listed runs among these ids; the first becomes current.
  void selectRuns(const QList<qint64>& ids);

  // What the toolbar does, without its dialogs. Each acts on every id it
  // can and refreshes; false with `error` naming what failed.
  bool addTag(const QList<qint64>& ids, const QString& tag, QString* error);
  bool removeTag(const QList<qint64>& ids, const QString& tag, QString* error);
  bool addNote(const QList<qint64>& ids, const QString& text, QString* error);
  // The curves of the runs as one CSV table (renaissance-cli runs export).
  bool exportCsv(const QList<qint64>& ids, const QString& path, QString* error);
  // The project as the run trained it (renaissance-cli runs show --project).
  bool exportProject(qint64 id, const QString& path, QString* error);
  // Deletes every run that may go; a run still being recorded is refused.
  bool deleteRuns(const QList<qint64>& ids, QString* error);

  // For tests and screenshots.
  QTableView* table() const { return table_; }
  RunsTableModel* runsModel() const { return model_; }
  QSortFilterProxyModel* sortedRuns() const { return proxy_; }
  RunOverlay* overlay() const { return overlay_; }
  ConfigDiffModel* configDiff() const;
  ConfigDiffView* configDiffView() const { return diff_; }
  QTabWidget* tabs() const { return tabs_; }
  QString compareSummary() const;
  QString detailsText() const;

 public slots:
  // Re-reads the store (a run started or ended); keeps the selection.
  void refresh();

 signals:
  void status(const QString& text);
  // A run was double-clicked (or opened with Enter).
  void runActivated(qint64 id);
  // Resume was chosen on a stopped, interrupted or failed run: continue it
  // from its latest checkpoint as the same run.
  void resumeRequested(qint64 id);
  // Follow was chosen on a run being recorded: show it live in the
  // Training view (a run another process records: the CLI, srun's tasks).
  void followRequested(qint64 id);

 protected:
  void showEvent(QShowEvent* event) override;
  void hideEvent(QHideEvent* event) override;

 private:
  struct CachedCurves {
    double updatedAt = 0;
    int status = 0;
    std::shared_ptr<const RunCurves> curves;
  };

  void buildActions();
  // Opens the store when it is not open yet; false with the reason when it cannot be.
  bool ensureStore(QString* error);
  void setError(const QString& error);
  void updateActions();
  void selectionChanged();
  void updateOverlay(const QList<qint64>& ids);
  void updateCompare(const QList<qint64>& ids);
  void updateDetails(const QList<qint64>& ids);
  // Runs `op` on every id with a store open; false (and the first message) when any failed.
  template <typename Op>
  bool forEachRun(const QList<qint64>& ids, QString* error, Op op);
  // What the panes last showed: they are rebuilt only when it changes, so a
  // poll that finds nothing new leaves a zoomed plot or a scrolled text alone.
  QString selectionSignature(const QList<qint64>& ids) const;
  void resetSignatures();

  void chooseAddTag();
  void chooseRemoveTag();
  void chooseAddNote();
  void chooseExportCsv();
  void chooseExportProject();
  void confirmDelete();

  QString storePath_;
  QString error_;
  std::unique_ptr<store::RunStore> store_;
  std::map<int64_t, CachedCurves> curves_;
  QString overlaySignature_, compareSignature_, detailsSignature_;
  int lastSelectionSize_ = 0;

  QLineEdit* filter_;
  QLabel* errorLabel_;
  QLabel* storeLabel_;
  RunsTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  RunOverlay* overlay_;
  QTabWidget* tabs_;
  QSplitter* lower_;     // the curves beside Details and Compare
  bool halved_ = false;  // lower_ split in half once, when first shown
  QLabel* compareSummary_;
  ConfigDiffView* diff_;
  QTextBrowser* details_;
  QTimer* poll_;

  QAction* refresh_;
  QAction* addTag_;
  QAction* removeTag_;
  QAction* addNote_;
  QAction* exportCsv_;
  QAction* exportProject_;
  QAction* resume_;
  QAction* follow_;
  QAction* delete_;
};

}  // namespace tr::gui

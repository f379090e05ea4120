// SPDX-License-Identifier: GPL-3.0-or-later
// The runs view: table, actions, overlay, comparison and details.
#include "runs/runs_view.h"

#include <QAction>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSaveFile>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>
#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include <renaissance/run_compare.h>
#include <renaissance/run_export.h>
#include <renaissance/store_location.h>
#include "runs/config_diff_model.h"
#include "runs/config_diff_view.h"
#include "runs/run_details.h"
#include "runs/run_overlay.h"
#include "runs/run_text.h"
#include "runs/runs_table_model.h"
#include "widgets/tone.h"

namespace tr::gui {

namespace {

// Often enough that a run started from the CLI appears while one looks;
// a listing costs a few small queries.
constexpr int kPollMs = 2000;

std::vector<int64_t> to_ids(const QList<qint64>& ids) {
  return std::vector<int64_t>(ids.begin(), ids.end());
}

QString id_list(const QList<qint64>& ids) {
  QStringList parts;
  for (const qint64 id : ids) parts << QString::number(id);
  return parts.join(QStringLiteral(", "));
}

bool write_file(const QString& path, const std::string& bytes, QString* error) {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) ||
      f.write(bytes.data(), static_cast<qint64>(bytes.size())) !=
          static_cast<qint64>(bytes.size()) ||
      !f.commit()) {
    if (error) *error = QObject::tr("cannot write '%1': %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

}  // namespace

RunsView::RunsView(QWidget* parent)
    : QWidget(parent),
      filter_(new QLineEdit(this)),
      errorLabel_(new QLabel(this)),
      storeLabel_(new QLabel(this)),
      model_(new RunsTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      overlay_(new RunOverlay(this)),
      tabs_(new QTabWidget(this)),
      compareSummary_(new QLabel(this)),
      diff_(new ConfigDiffView(this)),
      details_(new QTextBrowser(this)),
      poll_(new QTimer(this)) {
  try {
    storePath_ = QString::fromStdString(store::resolve_store_path());
  } catch (const std::exception& e) {
    error_ = QString::fromStdString(e.what());
  }

  filter_->setObjectName(QStringLiteral("runsFilter"));
  filter_->setPlaceholderText(tr("Filter runs"));
  filter_->setToolTip(
      tr("Shows the runs whose name, status, devices, precision, commit, tag or note holds "
         "this text"));
  filter_->setClearButtonEnabled(true);
  // The actions beside it fold into the toolbar's » menu before the filter shrinks.
  filter_->setMinimumWidth(filter_->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 24);
  connect(filter_, &QLineEdit::textChanged, this, &RunsView::refresh);

  errorLabel_->setObjectName(QStringLiteral("runsError"));
  errorLabel_->setWordWrap(true);
  errorLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  set_tone(errorLabel_, Tone::Error);
  errorLabel_->hide();
  storeLabel_->setObjectName(QStringLiteral("runsStore"));
  storeLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RunsTableModel::SortRole);
  proxy_->setDynamicSortFilter(true);
  table_->setObjectName(QStringLiteral("runsTable"));
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::Id, Qt::DescendingOrder);  // newest first
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setWordWrap(false);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsView::selectionChanged);
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    emit runActivated(index.data(RunsTableModel::RunIdRole).toLongLong());
  });

  compareSummary_->setObjectName(QStringLiteral("runsCompareSummary"));
  compareSummary_->setWordWrap(true);
  auto* compare = new QWidget(this);
  auto* compareLayout = new QVBoxLayout(compare);
  compareLayout->addWidget(compareSummary_);
  compareLayout->addWidget(diff_, 1);
  details_->setObjectName(QStringLiteral("runsDetails"));
  details_->setOpenLinks(false);
  tabs_->addTab(details_, tr("Details"));
  tabs_->addTab(compare, tr("Compare"));

  buildActions();
  auto* tools = new QToolBar(this);
  tools->setToolButtonStyle(Qt::ToolButtonTextOnly);
  tools->addActions({refresh_, follow_, resume_, addTag_, removeTag_, addNote_, exportCsv_,
                     exportProject_, delete_});
  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 1);
  top->addWidget(tools);

  lower_ = new QSplitter(Qt::Horizontal, this);
  QSplitter* lower = lower_;
  lower->addWidget(overlay_);
  lower->addWidget(tabs_);
  // Half each: the configuration's names and values need the room as much as
  // the curves do.
  lower->setStretchFactor(0, 1);
  lower->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(lower);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(errorLabel_);
  layout->addWidget(split, 1);
  layout->addWidget(storeLabel_);

  connect(overlay_, &RunOverlay::metricChanged, this, [this] { updateCompare(selectedRuns()); });
  poll_->setInterval(kPollMs);
  connect(poll_, &QTimer::timeout, this, &RunsView::refresh);
  resetSignatures();
  selectionChanged();
}

RunsView::~RunsView() = default;

void RunsView::resetSignatures() {
  // No selection has this signature, so the panes are filled on the next update.
  overlaySignature_ = compareSignature_ = detailsSignature_ = QStringLiteral("?");
}

void RunsView::buildActions() {
  const auto make = [this](const QString& text, const QString& tip, auto slot) {
    auto* a = new QAction(text, this);
    a->setToolTip(tip);
    a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(a, &QAction::triggered, this, slot);
    addAction(a);
    table_->addAction(a);
    return a;
  };
  refresh_ = make(tr("Refresh"), tr("Read the run store again"), &RunsView::refresh);
  refresh_->setShortcut(QKeySequence::Refresh);
  addTag_ = make(tr("Add tag…"), tr("Tag the selected runs"), &RunsView::chooseAddTag);
  removeTag_ = make(tr("Remove tag…"), tr("Remove a tag from the selected runs"),
                    &RunsView::chooseRemoveTag);
  addNote_ = make(tr("Add note…"), tr("Add a note to the selected runs"), &RunsView::chooseAddNote);
  exportCsv_ =
      make(tr("Export CSV…"), tr("The step and epoch curves of the selected runs as one CSV"),
           &RunsView::chooseExportCsv);
  exportProject_ = make(tr("Save project…"), tr("The project as the selected run trained it"),
                        &RunsView::chooseExportProject);
  follow_ = make(tr("Follow live"),
                 tr("Show the selected run, which is being recorded now (by this window, the CLI "
                    "or a launcher's processes), live in the Training view"),
                 [this] {
                   const QList<qint64> ids = selectedRuns();
                   if (ids.size() == 1) emit followRequested(ids.front());
                 });
  resume_ = make(tr("Resume"),
                 tr("Continue the selected stopped or interrupted run from its latest "
                    "checkpoint, as the same run"),
                 [this] {
                   const QList<qint64> ids = selectedRuns();
                   if (ids.size() == 1) emit resumeRequested(ids.front());
                 });
  delete_ =
      make(tr("Delete…"), tr("Delete the selected runs from the store"), &RunsView::confirmDelete);
  delete_->setShortcut(QKeySequence::Delete);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
}

void RunsView::setStorePath(const QString& path) {
  storePath_ = path;
  error_.clear();
  curves_.clear();
  resetSignatures();
  model_->setRuns({});
  refresh();
}

void RunsView::setFilterText(const QString& text) {
  if (filter_->text() == text)
    refresh();
  else
    filter_->setText(text);  // refreshes
}

QString RunsView::filterText() const {
  return filter_->text();
}

void RunsView::refresh() {
  std::vector<RunsTableModel::Row> rows;
  if (storePath_.isEmpty()) {
    store_.reset();
    setError(error_.isEmpty() ? tr("No run store is set.") : error_);
  } else {
    try {
      // Opened anew on every refresh: opening is what marks a run whose
      // writer died as interrupted, and it sees runs other processes added.
      store_ = std::make_unique<store::RunStore>(storePath_.toStdString());
      for (store::RunSummary& r : store_->list_runs(filter_->text().trimmed().toStdString())) {
        const int notes = static_cast<int>(store_->notes(r.id).size());
        rows.push_back({std::move(r), notes});
      }
      setError({});
    } catch (const std::exception& e) {
      store_.reset();
      rows.clear();
      setError(QString::fromStdString(e.what()));
    }
  }
  const bool wasEmpty = model_->rowCount() == 0;
  model_->setRuns(std::move(rows));
  if (wasEmpty && model_->rowCount() > 0) table_->resizeColumnsToContents();
  if (store_) {
    const int n = model_->rowCount();
    const QString runs = n == 1 ? tr("1 run") : tr("%1 runs").arg(n);
    storeLabel_->setText(filter_->text().trimmed().isEmpty()
                             ? tr("Store %1: %2").arg(storePath_, runs)
                             : tr("Store %1: %2 match the filter").arg(storePath_, runs));
  } else {
    storeLabel_->setText(tr("Store %1").arg(storePath_));
  }
  // Rows inserted, changed or removed keep the selection; the panes follow
  // what changed in the selected runs.
  selectionChanged();
}

void RunsView::setError(const QString& error) {
  if (error == errorLabel_->text() && error_ == error) return;
  error_ = error;
  errorLabel_->setText(error);
  errorLabel_->setVisible(!error.isEmpty());
  if (!error.isEmpty()) {
    curves_.clear();
    emit status(tr("Runs: %1").arg(error));
  }
}

QList<qint64> RunsView::selectedRuns() const {
  QList<qint64> ids;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows())
    ids << index.data(RunsTableModel::RunIdRole).toLongLong();
  std::sort(ids.begin(), ids.end());
  return ids;
}

void RunsView::selectRuns(const QList<qint64>& ids) {
  QItemSelection selection;
  QModelIndex first;
  for (const qint64 id : ids) {
    const int row = model_->rowOf(id);
    if (row < 0) continue;
    const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
    if (!first.isValid()) first = index;
    selection.select(index, index);
  }
  QItemSelectionModel* sm = table_->selectionModel();
  sm->select(selection, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  if (first.isValid()) {
    sm->setCurrentIndex(first, QItemSelectionModel::NoUpdate);
    table_->scrollTo(first);
  }
}

void RunsView::updateActions() {
  const int n = static_cast<int>(table_->selectionModel()->selectedRows().size());
  const bool open = store_ != nullptr;
  refresh_->setEnabled(!storePath_.isEmpty());
  for (QAction* a : {addTag_, addNote_, exportCsv_, delete_}) a->setEnabled(open && n > 0);
  exportProject_->setEnabled(open && n == 1);
  // Whether it has a checkpoint that can be read is for the resumption to say.
  bool resumable = false, running = false;
  if (open && n == 1)
    if (const auto* row = model_->find(selectedRuns().front())) {
      resumable = store::ended_early(row->summary.status);
      running = row->summary.status == store::RunStatus::Running;
    }
  resume_->setEnabled(resumable);
  follow_->setEnabled(running);
  bool tagged = false;
  for (const qint64 id : selectedRuns())
    if (const auto* row = model_->find(id)) tagged = tagged || !row->summary.tags.empty();
  removeTag_->setEnabled(open && tagged);
}

QString RunsView::selectionSignature(const QList<qint64>& ids) const {
  QString sig;
  for (const qint64 id : ids) {
    const auto* row = model_->find(id);
    if (!row) continue;
    const store::RunSummary& r = row->summary;
    sig += QStringLiteral("%1:%2:%3:%4:%5;")
               .arg(id)
               .arg(r.updated_at, 0, 'g', 17)
               .arg(static_cast<int>(r.status))
               .arg(row->notes)
               .arg(QString::fromStdString(std::accumulate(
                   r.tags.begin(), r.tags.end(), std::string(),
                   [](std::string a, const std::string& b) { return a + b + ','; })));
  }
  return sig;
}

void RunsView::selectionChanged() {
  const QList<qint64> ids = selectedRuns();
  updateActions();
  updateOverlay(ids);
  updateCompare(ids);
  updateDetails(ids);
  const int n = static_cast<int>(ids.size());
  // Follow the selection to the pane it fills, only when it crosses over,
  // so a tab the user picked stays picked.
  if (n >= 2 && lastSelectionSize_ < 2) tabs_->setCurrentIndex(1);
  if (n == 1 && lastSelectionSize_ != 1) tabs_->setCurrentIndex(0);
  lastSelectionSize_ = n;
}

void RunsView::updateOverlay(const QList<qint64>& ids) {
  std::map<int64_t, CachedCurves> kept;
  std::vector<RunOverlay::Run> runs;
  QString sig;
  for (const qint64 id : ids) {
    const auto* row = store_ ? model_->find(id) : nullptr;
    if (!row) continue;
    const store::RunSummary& r = row->summary;
    CachedCurves c;
    const auto it = curves_.find(id);
    // A run's records only grow while its writer commits, and every commit moves updated_at.
    if (it != curves_.end() && it->second.updatedAt == r.updated_at &&
        it->second.status == static_cast<int>(r.status)) {
      c = it->second;
    } else {
      try {
        c = {r.updated_at, static_cast<int>(r.status),
             std::make_shared<const RunCurves>(load_run_curves(*store_, id))};
      } catch (const std::exception& e) {
        emit status(tr("Run %1: %2").arg(id).arg(QString::fromStdString(e.what())));
        continue;
      }
    }
    kept[id] = c;
    runs.push_back({tr("Run %1 (%2)").arg(id).arg(QString::fromStdString(r.name)), c.curves});
    sig += QStringLiteral("%1@%2;").arg(id).arg(reinterpret_cast<quintptr>(c.curves.get()));
  }
  curves_ = std::move(kept);
  // Unchanged curves are not handed to the plot again, which would undo a zoom.
  if (sig == overlaySignature_) return;
  overlaySignature_ = sig;
  overlay_->setRuns(std::move(runs));
}

void RunsView::updateCompare(const QList<qint64>& ids) {
  std::string metric = overlay_->metric();
  const auto& comparable = store::comparable_metrics();
  if (std::find(comparable.begin(), comparable.end(), metric) == comparable.end())
    metric = "val_top1";
  const QString sig = selectionSignature(ids) + QString::fromStdString(metric);
  if (sig == compareSignature_) return;
  compareSignature_ = sig;
  if (!store_ || ids.size() < 2) {
    diff_->clear();
    compareSummary_->setText(tr("Select two or more runs to compare their configurations."));
    return;
  }
  try {
    const store::RunComparison c = store::compare_runs(*store_, to_ids(ids), metric);
    diff_->setComparison(c);
    // Counted as the table shows them: a layer is one difference, not one per field.
    const int n = diff_->model()->differenceCount();
    QString text = n == 0   ? tr("The configurations of runs %1 are identical.").arg(id_list(ids))
                   : n == 1 ? tr("1 setting differs between runs %1.").arg(id_list(ids))
                            : tr("%1 settings differ between runs %2.").arg(n).arg(id_list(ids));
    if (c.best) {
      const std::optional<double> v = c.final_metric[*c.best];
      const QString value = metric.find("top") != std::string::npos ? percent_text(v)
                            : metric == "images_per_s"              ? QString::number(*v, 'f', 0)
                                                                    : loss_text(v);
      text += QLatin1Char(' ') + tr("Best final %1: run %2 (%3).")
                                     .arg(QString::fromStdString(metric))
                                     .arg(c.runs[*c.best].summary.id)
                                     .arg(value);
    }
    compareSummary_->setText(text);
  } catch (const std::exception& e) {
    diff_->clear();
    compareSummary_->setText(QString::fromStdString(e.what()));
  }
}

void RunsView::updateDetails(const QList<qint64>& ids) {
  const QString sig = selectionSignature(ids);
  if (sig == detailsSignature_) return;
  detailsSignature_ = sig;
  if (!store_ || ids.size() != 1) {
    details_->setHtml(ids.size() > 1 ? tr("<p>%1 runs selected: see Compare.</p>").arg(ids.size())
                                     : tr("<p>Select a run to see its details.</p>"));
    return;
  }
  try {
    details_->setHtml(run_details_html(*store_, ids.front()));
  } catch (const std::exception& e) {
    details_->setPlainText(QString::fromStdString(e.what()));
  }
}

ConfigDiffModel* RunsView::configDiff() const {
  return diff_->model();
}

QString RunsView::compareSummary() const {
  return compareSummary_->text();
}

QString RunsView::detailsText() const {
  return details_->toPlainText();
}

bool RunsView::ensureStore(QString* error) {
  if (!store_) refresh();
  if (!store_ && error) *error = error_;
  return store_ != nullptr;
}

template <typename Op>
bool RunsView::forEachRun(const QList<qint64>& ids, QString* error, Op op) {
  QStringList problems;
  if (QString why; !ensureStore(&why)) {
    problems << why;
  } else {
    for (const qint64 id : ids) {
      try {
        op(*store_, static_cast<int64_t>(id));
      } catch (const std::exception& e) {
        problems << QString::fromStdString(e.what());
      }
    }
  }
  refresh();
  if (error) *error = problems.join(QLatin1Char('\n'));
  return problems.isEmpty();
}

bool RunsView::addTag(const QList<qint64>& ids, const QString& tag, QString* error) {
  const std::string t = tag.toStdString();
  const bool ok = forEachRun(ids, error, [&](store::RunStore& s, int64_t id) { s.add_tag(id, t); });
  if (ok) emit status(tr("Tagged runs %1 '%2'").arg(id_list(ids), tag));
  return ok;
}

bool RunsView::removeTag(const QList<qint64>& ids, const QString& tag, QString* error) {
  const std::string t = tag.toStdString();
  const bool ok =
      forEachRun(ids, error, [&](store::RunStore& s, int64_t id) { s.remove_tag(id, t); });
  if (ok) emit status(tr("Removed tag '%1' from runs %2").arg(tag, id_list(ids)));
  return ok;
}

bool RunsView::addNote(const QList<qint64>& ids, const QString& text, QString* error) {
  if (text.trimmed().isEmpty()) {
    if (error) *error = tr("a note cannot be empty");
    return false;
  }
  const std::string t = text.toStdString();
  const bool ok =
      forEachRun(ids, error, [&](store::RunStore& s, int64_t id) { s.add_note(id, t); });
  if (ok) emit status(tr("Added a note to runs %1").arg(id_list(ids)));
  return ok;
}

bool RunsView::exportCsv(const QList<qint64>& ids, const QString& path, QString* error) {
  if (ids.isEmpty()) {
    if (error) *error = tr("no runs to export");
    return false;
  }
  if (!ensureStore(error)) return false;
  std::ostringstream text;
  try {
    store::write_curves_csv(*store_, to_ids(ids), text);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  if (!write_file(path, text.str(), error)) return false;
  emit status(tr("Wrote the curves of runs %1 to %2").arg(id_list(ids), path));
  return true;
}

bool RunsView::exportProject(qint64 id, const QString& path, QString* error) {
  std::string project;
  const bool ok = forEachRun(
      {id}, error, [&](store::RunStore& s, int64_t run) { project = s.run(run).project_json; });
  if (!ok) return false;
  const auto j = nlohmann::json::parse(project, nullptr, false);
  if (!write_file(path, j.is_discarded() ? project : j.dump(2) + '\n', error)) return false;
  emit status(tr("Saved the project of run %1 to %2").arg(id).arg(path));
  return true;
}

bool RunsView::deleteRuns(const QList<qint64>& ids, QString* error) {
  QList<qint64> deleted;
  const bool ok = forEachRun(ids, error, [&](store::RunStore& s, int64_t id) {
    s.delete_run(id);
    deleted << id;
  });
  if (!deleted.isEmpty()) emit status(tr("Deleted runs %1").arg(id_list(deleted)));
  return ok;
}

void RunsView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refresh();
  poll_->start();
  // Shown the first time: the curves and Details/Compare get half each,
  // once the layout has given the splitter its width (their size hints
  // alone gave Compare a fifth).
  if (!halved_) {
    halved_ = true;
    QTimer::singleShot(0, lower_, [this] {
      const int w = lower_->width();
      lower_->setSizes({w / 2, w - w / 2});
    });
  }
}

void RunsView::hideEvent(QHideEvent* event) {
  poll_->stop();
  QWidget::hideEvent(event);
}

void RunsView::chooseAddTag() {
  const QList<qint64> ids = selectedRuns();
  if (ids.isEmpty()) return;
  bool ok = false;
  const QString tag =
      QInputDialog::getText(this, tr("Add tag"),
                            tr("Tag for runs %1 (one word, no commas):").arg(id_list(ids)),
                            QLineEdit::Normal, {}, &ok)
          .trimmed();
  if (!ok || tag.isEmpty()) return;
  QString error;
  if (!addTag(ids, tag, &error)) QMessageBox::warning(this, tr("Add tag"), error);
}

void RunsView::chooseRemoveTag() {
  const QList<qint64> ids = selectedRuns();
  std::set<std::string> tags;
  for (const qint64 id : ids)
    if (const auto* row = model_->find(id))
      tags.insert(row->summary.tags.begin(), row->summary.tags.end());
  if (tags.empty()) return;
  QStringList items;
  for (const std::string& t : tags) items << QString::fromStdString(t);
  bool ok = false;
  const QString tag = QInputDialog::getItem(this, tr("Remove tag"),
                                            tr("Tag to remove from runs %1:").arg(id_list(ids)),
                                            items, 0, false, &ok);
  if (!ok || tag.isEmpty()) return;
  QString error;
  if (!removeTag(ids, tag, &error)) QMessageBox::warning(this, tr("Remove tag"), error);
}

void RunsView::chooseAddNote() {
  const QList<qint64> ids = selectedRuns();
  if (ids.isEmpty()) return;
  bool ok = false;
  const QString text = QInputDialog::getMultiLineText(
      this, tr("Add note"), tr("Note for runs %1:").arg(id_list(ids)), {}, &ok);
  if (!ok || text.trimmed().isEmpty()) return;
  QString error;
  if (!addNote(ids, text, &error)) QMessageBox::warning(this, tr("Add note"), error);
}

void RunsView::chooseExportCsv() {
  const QList<qint64> ids = selectedRuns();
  if (ids.isEmpty()) return;
  const QString suggested = ids.size() == 1 ? tr("run-%1.csv").arg(ids.front()) : tr("runs.csv");
  const QString path = QFileDialog::getSaveFileName(this, tr("Export curves as CSV"), suggested,
                                                    tr("CSV files (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(ids, path, &error)) QMessageBox::warning(this, tr("Export CSV"), error);
}

void RunsView::chooseExportProject() {
  const QList<qint64> ids = selectedRuns();
  if (ids.size() != 1) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save the project as trained"),
                                                    tr("run-%1-project.json").arg(ids.front()),
                                                    tr("Projects (*.json)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportProject(ids.front(), path, &error))
    QMessageBox::warning(this, tr("Save project"), error);
}

void RunsView::confirmDelete() {
  const QList<qint64> ids = selectedRuns();
  if (ids.isEmpty()) return;
  QStringList names;
  for (const qint64 id : ids)
    if (const auto* row = model_->find(id))
      names << tr("run %1 (%2)").arg(id).arg(QString::fromStdString(row->summary.name));
  const auto answer = QMessageBox::question(
      this, tr("Delete runs"),
      tr("Delete %1 and everything the store recorded for them (curves, epochs, checkpoint "
         "records, tags, notes)? Checkpoint files stay on disk. This cannot be undone.")
          .arg(names.join(QStringLiteral(", "))),
      QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
  if (answer != QMessageBox::Yes) return;
  QString error;
  if (!deleteRuns(ids, &error)) QMessageBox::warning(this, tr("Delete runs"), error);
}

}  // namespace tr::gui

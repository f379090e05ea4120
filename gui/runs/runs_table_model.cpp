// SPDX-License-Identifier: GPL-3.0-or-later
// The run list as a table model.
#include "runs/runs_table_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>
#include <limits>
#include <unordered_set>

#include "runs/run_text.h"

namespace tr::gui {

namespace {

// Missing metrics sort before every value rather than mixing with them.
QVariant sortable(const std::optional<double>& v) {
  return v ? *v : std::numeric_limits<double>::lowest();
}

bool sameRow(const RunsTableModel::Row& a, const RunsTableModel::Row& b) {
  const store::RunSummary &x = a.summary, &y = b.summary;
  return a.notes == b.notes && x.name == y.name && x.status == y.status &&
         x.ended_at == y.ended_at && x.updated_at == y.updated_at && x.steps == y.steps &&
         x.epochs == y.epochs && x.final_train_loss == y.final_train_loss &&
         x.final_val_top1 == y.final_val_top1 && x.tags == y.tags;
}

}  // namespace

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::setRuns(std::vector<Row> rows) {
  std::unordered_set<int64_t> kept;
  for (const Row& r : rows) kept.insert(r.summary.id);
  for (int i = static_cast<int>(rows_.size()) - 1; i >= 0; --i) {
    if (kept.count(rows_[static_cast<size_t>(i)].summary.id)) continue;
    beginRemoveRows({}, i, i);
    rows_.erase(rows_.begin() + i);
    endRemoveRows();
  }
  // Both lists are ordered by id, so what is left of the old one is a
  // subsequence of the new one: insert the runs between its rows.
  size_t i = 0;
  while (i < rows.size()) {
    if (i < rows_.size() && rows_[i].summary.id == rows[i].summary.id) {
      if (!sameRow(rows_[i], rows[i])) {
        rows_[i] = std::move(rows[i]);
        const int r = static_cast<int>(i);
        emit dataChanged(index(r, 0), index(r, ColumnCount - 1));
      }
      ++i;
      continue;
    }
    size_t end = i;
    const int64_t next = i < rows_.size() ? rows_[i].summary.id : -1;
    while (end < rows.size() && rows[end].summary.id != next) ++end;
    beginInsertRows({}, static_cast<int>(i), static_cast<int>(end) - 1);
    rows_.insert(rows_.begin() + static_cast<std::ptrdiff_t>(i),
                 std::make_move_iterator(rows.begin() + static_cast<std::ptrdiff_t>(i)),
                 std::make_move_iterator(rows.begin() + static_cast<std::ptrdiff_t>(end)));
    endInsertRows();
    i = end;
  }
}

int64_t RunsTableModel::runAt(int row) const {
  return row >= 0 && static_cast<size_t>(row) < rows_.size()
             ? rows_[static_cast<size_t>(row)].summary.id
             : 0;
}

int RunsTableModel::rowOf(int64_t id) const {
  const auto it = std::lower_bound(rows_.begin(), rows_.end(), id,
                                   [](const Row& r, int64_t v) { return r.summary.id < v; });
  return it != rows_.end() && it->summary.id == id ? static_cast<int>(it - rows_.begin()) : -1;
}

const RunsTableModel::Row* RunsTableModel::find(int64_t id) const {
  const int row = rowOf(id);
  return row < 0 ? nullptr : &rows_[static_cast<size_t>(row)];
}

int RunsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RunsTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || static_cast<size_t>(index.row()) >= rows_.size()) return {};
  const Row& row = rows_[static_cast<size_t>(index.row())];
  const store::RunSummary& r = row.summary;
  if (role == RunIdRole) return static_cast<qint64>(r.id);
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case Id:
      case Duration:
      case Steps:
      case Epochs:
      case ValTop1:
      case TrainLoss:
      case Notes:
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      default:
        return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Status) {
    switch (r.status) {
      case store::RunStatus::Running:
        return QBrush(QColor(0x15, 0x65, 0xc0));
      case store::RunStatus::Failed:
        return QBrush(QColor(0xc6, 0x28, 0x28));
      case store::RunStatus::Interrupted:
        return QBrush(QColor(0xb2, 0x6a, 0x00));
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Devices)
    return tr("world size %1, seed %2").arg(r.world_size).arg(r.seed);
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool raw = role == SortRole;
  switch (index.column()) {
    case Id:
      return static_cast<qint64>(r.id);
    case Name:
      return QString::fromStdString(r.name);
    case Status:
      return run_status_text(r.status);
    case Started:
      return raw ? QVariant(r.started_at) : QVariant(run_local_time(r.started_at));
    case Duration:
      return raw ? QVariant(run_seconds(r)) : QVariant(run_duration_text(run_seconds(r)));
    case Devices:
      return QString::fromStdString(r.devices);
    case Precision:
      return QString::fromStdString(r.precision);
    case Steps:
      return static_cast<qint64>(r.steps);
    case Epochs:
      return static_cast<qint64>(r.epochs);
    case ValTop1:
      return raw ? sortable(r.final_val_top1) : QVariant(percent_text(r.final_val_top1));
    case TrainLoss:
      return raw ? sortable(r.final_train_loss) : QVariant(loss_text(r.final_train_loss));
    case Tags: {
      QStringList tags;
      for (const std::string& t : r.tags) tags << QString::fromStdString(t);
      return tags.join(QStringLiteral(", "));
    }
    case Notes:
      return row.notes;
    default:
      return {};
  }
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case Id:
      return tr("ID");
    case Name:
      return tr("Project");
    case Status:
      return tr("Status");
    case Started:
      return tr("Started");
    case Duration:
      return tr("Time");
    case Devices:
      return tr("Devices");
    case Precision:
      return tr("Precision");
    case Steps:
      return tr("Steps");
    case Epochs:
      return tr("Epochs");
    case ValTop1:
      return tr("Val top-1");
    case TrainLoss:
      return tr("Train loss");
    case Tags:
      return tr("Tags");
    case Notes:
      return tr("Notes");
    default:
      return {};
  }
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Configuration differences between runs as a grouped tree model.
#include "runs/config_diff_model.h"

#include <QFont>
#include <QFontDatabase>
#include <QStringList>
#include <algorithm>

namespace tr::gui {

namespace {

// A group row's internal id; a setting row's is its group's index + 1.
constexpr quintptr kGroupRow = 0;

}  // namespace

ConfigDiffModel::ConfigDiffModel(QObject* parent) : QAbstractItemModel(parent) {}

void ConfigDiffModel::setComparison(const store::RunComparison& comparison) {
  beginResetModel();
  groups_ = group_config_differences(comparison);
  ids_.clear();
  names_.clear();
  for (const store::RunDetail& d : comparison.runs) {
    ids_.push_back(d.summary.id);
    names_.push_back(QString::fromStdString(d.summary.name));
  }
  endResetModel();
}

void ConfigDiffModel::clear() {
  beginResetModel();
  groups_.clear();
  ids_.clear();
  names_.clear();
  endResetModel();
}

QString ConfigDiffModel::groupTitle(int group) const {
  return group >= 0 && group < groupCount()
             ? QString::fromStdString(groups_[static_cast<size_t>(group)].title)
             : QString();
}

QModelIndex ConfigDiffModel::groupIndex(const QString& title) const {
  for (int g = 0; g < groupCount(); ++g)
    if (groupTitle(g) == title) return index(g, 0);
  return {};
}

QModelIndex ConfigDiffModel::indexOf(const QString& key) const {
  const std::string k = key.toStdString();
  for (size_t g = 0; g < groups_.size(); ++g)
    for (size_t r = 0; r < groups_[g].rows.size(); ++r)
      if (groups_[g].rows[r].key == k)
        return createIndex(static_cast<int>(r), 0, static_cast<quintptr>(g + 1));
  return {};
}

int ConfigDiffModel::differenceCount() const {
  int n = 0;
  for (const ConfigDiffGroup& g : groups_) n += static_cast<int>(g.rows.size());
  return n;
}

QModelIndex ConfigDiffModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= columnCount()) return {};
  if (!parent.isValid())
    return row < groupCount() ? createIndex(row, column, kGroupRow) : QModelIndex();
  if (parent.internalId() != kGroupRow || parent.row() >= groupCount()) return {};
  const auto group = static_cast<size_t>(parent.row());
  return static_cast<size_t>(row) < groups_[group].rows.size()
             ? createIndex(row, column, static_cast<quintptr>(group + 1))
             : QModelIndex();
}

QModelIndex ConfigDiffModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == kGroupRow) return {};
  return createIndex(static_cast<int>(child.internalId() - 1), 0, kGroupRow);
}

int ConfigDiffModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return groupCount();
  if (parent.internalId() != kGroupRow || parent.column() != 0 || parent.row() >= groupCount())
    return 0;
  return static_cast<int>(groups_[static_cast<size_t>(parent.row())].rows.size());
}

int ConfigDiffModel::columnCount(const QModelIndex&) const {
  return ids_.empty() ? 0 : 1 + static_cast<int>(ids_.size());
}

QVariant ConfigDiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const auto run = static_cast<size_t>(index.column() - 1);
  if (index.internalId() == kGroupRow) {
    const ConfigDiffGroup& g = groups_.at(static_cast<size_t>(index.row()));
    if (role == Qt::FontRole) {
      QFont bold;
      bold.setBold(true);
      return bold;
    }
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
    if (index.column() == 0) {
      const QString title = QString::fromStdString(g.title);
      QString text = g.rows.size() == 1 ? tr("%1: 1 difference").arg(title)
                                        : tr("%1: %2 differences").arg(title).arg(g.rows.size());
      // A view spanning the group row over the run columns reads the runs' values here.
      QStringList values;
      for (const std::string& v : g.values) values << QString::fromStdString(v);
      if (!values.isEmpty())
        text += QStringLiteral(" (%1)").arg(values.join(QStringLiteral(" / ")));
      return text;
    }
    return run < g.values.size() ? QString::fromStdString(g.values[run]) : QString();
  }
  const ConfigDiffRow& r = groups_.at(static_cast<size_t>(index.internalId() - 1))
                               .rows.at(static_cast<size_t>(index.row()));
  switch (role) {
    case KeyRole:
      return QString::fromStdString(r.key);
    case Qt::FontRole:
      // Names and values of settings line up as in the project file.
      return QFontDatabase::systemFont(QFontDatabase::FixedFont);
    case Qt::DisplayRole:
      if (index.column() == 0) return QString::fromStdString(r.label);
      return run < r.values.size() ? QString::fromStdString(r.values[run]) : QString();
    case Qt::ToolTipRole:
      // The whole value, which a narrow column elides.
      if (index.column() == 0) return QString::fromStdString(r.summary);
      return run < r.values.size()
                 ? tr("Run %1: %2").arg(ids_[run]).arg(QString::fromStdString(r.values[run]))
                 : QString();
    default:
      return {};
  }
}

QVariant ConfigDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (section == 0) return role == Qt::DisplayRole ? tr("Setting") : QVariant();
  const auto run = static_cast<size_t>(section - 1);
  if (run >= ids_.size()) return {};
  // The project's name only where the runs are of several (the summary
  // above names a common one), and the run by its number alone: the column
  // stays as narrow as its values, a three-digit run in a narrow pane too.
  if (role == Qt::DisplayRole)
    return std::all_of(names_.begin(), names_.end(),
                       [&](const QString& n) { return n == names_.front(); })
               ? tr("#%1").arg(ids_[run])
               : tr("#%1\n%2").arg(ids_[run]).arg(names_[run]);
  if (role == Qt::ToolTipRole) return tr("Run %1: %2").arg(ids_[run]).arg(names_[run]);
  return {};
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Configuration differences between runs as a table model.
#include "runs/config_diff_model.h"

#include <QFontDatabase>

namespace tr::gui {

ConfigDiffModel::ConfigDiffModel(QObject* parent) : QAbstractTableModel(parent) {}

void ConfigDiffModel::setComparison(const store::RunComparison& comparison) {
  beginResetModel();
  rows_ = comparison.differences;
  runs_.clear();
  names_.clear();
  for (const store::RunDetail& d : comparison.runs) {
    runs_.push_back(tr("Run %1").arg(d.summary.id));
    names_.push_back(QString::fromStdString(d.summary.name));
  }
  endResetModel();
}

void ConfigDiffModel::clear() {
  beginResetModel();
  rows_.clear();
  runs_.clear();
  names_.clear();
  endResetModel();
}

int ConfigDiffModel::rowOf(const QString& key) const {
  const std::string k = key.toStdString();
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].key == k) return static_cast<int>(i);
  return -1;
}

int ConfigDiffModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ConfigDiffModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || runs_.empty() ? 0 : 1 + static_cast<int>(runs_.size());
}

QVariant ConfigDiffModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || static_cast<size_t>(index.row()) >= rows_.size()) return {};
  const store::ConfigDifference& d = rows_[static_cast<size_t>(index.row())];
  if (role == Qt::FontRole && index.column() == 0)
    return QFontDatabase::systemFont(QFontDatabase::FixedFont);
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  if (index.column() == 0) return QString::fromStdString(d.key);
  const auto run = static_cast<size_t>(index.column() - 1);
  return run < d.values.size() ? QString::fromStdString(d.values[run]) : QString();
}

QVariant ConfigDiffModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  if (section == 0) return role == Qt::DisplayRole ? tr("Configuration key") : QVariant();
  const auto run = static_cast<size_t>(section - 1);
  if (run >= runs_.size()) return {};
  if (role == Qt::DisplayRole) return runs_[run];
  if (role == Qt::ToolTipRole) return names_[run];
  return {};
}

}  // namespace tr::gui

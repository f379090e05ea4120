// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigDiffModel: the configuration entries that differ between the
// selected runs (rows) with each run's value (columns), as compare_runs()
// finds them.
#pragma once

#include <QAbstractTableModel>
#include <QString>
#include <vector>

#include "store/run_compare.h"

namespace tr::gui {

class ConfigDiffModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  explicit ConfigDiffModel(QObject* parent = nullptr);

  void setComparison(const store::RunComparison& comparison);
  void clear();
  // The row of a configuration key ("training/optimizer/lr"), or -1.
  int rowOf(const QString& key) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<store::ConfigDifference> rows_;
  std::vector<QString> runs_;  // column titles
  std::vector<QString> names_;
};

}  // namespace tr::gui

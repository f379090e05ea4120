// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigDiffModel: the configuration differences between the selected runs
// as a two-level tree: one row per group ("Model: 12 differences (14 layers /
// 32 layers)", the runs' values also in their columns) with the
// differing settings under it, and one column per run beside the setting's
// name, so the runs' values read side by side.
#pragma once

#include <QAbstractItemModel>
#include <QString>
#include <vector>

#include <renaissance/run_compare.h>
#include "runs/config_diff_groups.h"

namespace tr::gui {

class ConfigDiffModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Role { KeyRole = Qt::UserRole + 1 };  // a setting row's key ("training/optimizer/lr")

  explicit ConfigDiffModel(QObject* parent = nullptr);

  void setComparison(const store::RunComparison& comparison);
  void clear();

  int groupCount() const { return static_cast<int>(groups_.size()); }
  // "Model", "Training", "Dataset", "Devices and other".
  QString groupTitle(int group) const;
  // The group row of this title, or an invalid index.
  QModelIndex groupIndex(const QString& title) const;
  // The row of a setting by key ("training/optimizer/lr", "model/conv1"), or an invalid index.
  QModelIndex indexOf(const QString& key) const;
  // Setting rows over all groups.
  int differenceCount() const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<ConfigDiffGroup> groups_;
  std::vector<qint64> ids_;  // per run column
  std::vector<QString> names_;
};

}  // namespace tr::gui

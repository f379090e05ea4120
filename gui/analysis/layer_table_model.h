// SPDX-License-Identifier: GPL-3.0-or-later
// LayerTableModel: the network analysis (renaissance/layer_analysis.h) as a
// table: one row a layer, its output, parameters, forward FLOPs, each
// variant's activation bytes, what the compiler did to it and its warnings.
#pragma once

#include <QAbstractTableModel>

#include <renaissance/layer_analysis.h>

namespace tr::gui {

class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Layer, Type, Settings, Output, Parameters, Flops, FirstVariant };
  // Sort by this role: numbers as numbers.
  static constexpr int SortRole = Qt::UserRole + 1;
  static constexpr int NodeRole = Qt::UserRole + 2;  // the model node's index

  explicit LayerTableModel(QObject* parent = nullptr);

  void setTable(LayerTable table);
  const LayerTable& table() const { return table_; }
  int warningCount() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  int compilerColumn() const { return FirstVariant + static_cast<int>(table_.variants.size()); }
  int warningsColumn() const { return compilerColumn() + 1; }

  LayerTable table_;
};

}  // namespace tr::gui

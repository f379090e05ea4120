// SPDX-License-Identifier: GPL-3.0-or-later
// DTensorTableModel: the DTensors of one variant's plan (all, or one
// region's) as table rows: id, name, layer, region, shape, dtype, padded C,
// placement and what the chosen rank holds of it, offset, slot bytes, and
// whether the offset is the same in every variant.
// A layer filter narrows the rows to the tensors some model nodes own.
#pragma once

#include <QAbstractTableModel>
#include <memory>
#include <vector>

#include <renaissance/compiled_plan.h>

namespace tr::gui {

class DTensorTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Id,
    Name,
    Layer,
    RegionColumn,
    ShapeColumn,
    DTypeColumn,
    PaddedC,
    PlacementColumn,  // over the data-parallel ranks: R, P, S(0)
    RankColumn,       // what the chosen rank holds of it: a shard's parameters
    Offset,
    SlotBytes,
    Variants,
    ColumnCount
  };
  // Raw values (numbers as numbers) for sorting.
  static constexpr int SortRole = Qt::UserRole;

  explicit DTensorTableModel(QObject* parent = nullptr);

  // Shares the plan's ownership: the rows never outlive the tensors they
  // name, whatever the view asks for while a new plan is being set. Region
  // -1 lists every tensor, kPoolBand (pool_band.h) the step-local pool's.
  void setPlan(std::shared_ptr<const CompiledPlan> cp, int variant, int region);
  int region() const { return region_; }
  // Only the tensors these model nodes own (empty: no filter). Applies from
  // the next setPlan.
  void setLayerFilter(std::vector<int> layers) { layers_ = std::move(layers); }
  const std::vector<int>& layerFilter() const { return layers_; }
  // The rank whose share RankColumn shows.
  void setRank(int rank);
  int rank() const { return rank_; }
  DTensorId tensorAt(int row) const;
  int rowOf(DTensorId id) const;  // -1 when not listed

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::shared_ptr<const CompiledPlan> cp_;
  int variant_ = 0;
  int region_ = -1;
  int rank_ = 0;
  std::vector<int> layers_;
  std::vector<DTensorId> rows_;
  std::vector<bool> agrees_;  // per DTensor id
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// MemoryView: the compiled MemoryPlan. Per variant: the regions (and a
// packed plan's step-local pool) as bands to scale (linear or log), the
// pool's tensors over the step as a lifetime chart, their DTensors in a
// table, and whether every tensor keeps its offset across variants; per
// rank: the arenas (identical by design); in all: the bytes per device and
// whether they fit the chosen devices, and, for a chosen rank, what it holds
// of each sharded tensor. Exports the plan as JSON or CSV.
// Linked to the designer: the selected nodes' tensors are marked and listed,
// a band names the nodes owning its tensors, and clicking one of them (or
// double-clicking a tensor's row or block) asks for that node.
#pragma once

#include <QTime>
#include <QWidget>
#include <memory>

#include <renaissance/compiled_plan.h>
#include <renaissance/devices.h>

class QComboBox;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QStackedWidget;
class QTabWidget;
class QTableView;
class QTreeWidget;

namespace tr::gui {

class DTensorTableModel;
class LifetimeChart;
class RecomputeCurveView;
class RegionBands;

class MemoryView : public QWidget {
  Q_OBJECT

 public:
  explicit MemoryView(QWidget* parent = nullptr);
  ~MemoryView() override;

  void setCompiled(std::shared_ptr<const CompiledPlan> cp, const DeviceScan& scan);
  const CompiledPlan* compiled() const { return cp_.get(); }
  const std::shared_ptr<const CompiledPlan>& plan() const { return cp_; }
  // The design changed since this plan was compiled.
  void setStale(bool stale);
  bool isStale() const { return stale_; }

  int variant() const;
  void setVariant(int index);
  // Lists the tensors of one band (-1: all): a region, or kPoolBand.
  void showRegion(int region);
  // Selects the tensor's row (showing its region if it is filtered out).
  void showTensor(DTensorId id);
  DTensorId selectedTensor() const;
  // Marks the tensors of these model nodes and lists only theirs (empty: all).
  void highlightLayers(const QList<int>& layers);
  QList<int> highlightedLayers() const;
  // The model nodes owning the tensors of a band, as the owners line shows them.
  QList<int> regionOwners(int region) const;
  QString ownersText() const;

  bool exportJson(const QString& path, QString* error);
  bool exportCsv(const QString& path, QString* error);

  // For tests and screenshots.
  RegionBands* bands() const { return bands_; }
  LifetimeChart* lifetimeChart() const { return chart_; }
  RecomputeCurveView* recomputeCurve() const { return curve_; }
  // "Arena" (the bands), "Step lifetimes" (the chart) and "Memory against
  // compute" (the recomputation curve).
  QTabWidget* arenaTabs() const { return tabs_; }
  QComboBox* variantSelector() const { return variant_; }
  // The rank whose share of each sharded tensor the table shows.
  QComboBox* rankSelector() const { return rank_; }
  QComboBox* scaleSelector() const { return scale_; }
  QTableView* tensorTable() const { return table_; }
  DTensorTableModel* tensorModel() const { return model_; }
  QTreeWidget* arenaTable() const { return arenas_; }
  QString summaryText() const;
  // Some tensors are each rank's share (training.sharding).
  bool sharded() const;
  QString agreementText() const;
  QString legendText() const;
  bool fits() const { return fits_; }

 signals:
  void status(const QString& text);
  // The user asked to see a model node (an owner link, a tensor row double-clicked).
  void layerRequested(int layer);
  // The user picked a point of the recomputation curve: a memory budget.
  void budgetPicked(qint64 mib);

 private:
  void refresh();
  void refreshTensors();
  void refreshOwners();
  void chooseExport(bool json);

  std::shared_ptr<const CompiledPlan> cp_;
  DeviceScan scan_;
  bool stale_ = false;
  bool fits_ = false;
  QTime compiledAt_;
  QString fitText_;

  QStackedWidget* pages_;
  QLabel* empty_;
  QLabel* staleBanner_;
  QComboBox* variant_;
  QComboBox* rank_;
  QComboBox* scale_;
  QPushButton* exportJson_;
  QPushButton* exportCsv_;
  QLabel* summary_;
  QLabel* agreement_;
  QLabel* legend_;
  QTabWidget* tabs_;
  RegionBands* bands_;
  LifetimeChart* chart_;
  RecomputeCurveView* curve_;
  QLabel* owners_;
  QLabel* tensorsTitle_;
  QPushButton* allRegions_;
  DTensorTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QTreeWidget* arenas_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// NetworkAnalysisPanel (View > Network Analysis): the compiled design
// analysed layer by layer, before training, as MATLAB's analyzeNetwork and
// Neural Network Console's cost table give it: a caption with the totals,
// the table (sortable; a row's warnings in its tooltip) and Export CSV. A
// click on a row selects the layer in the designer; a design changed since
// the compile says so until it is compiled again.
#pragma once

#include <QWidget>
#include <memory>

#include <renaissance/compiled_plan.h>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace tr::gui {

class LayerTableModel;

class NetworkAnalysisPanel : public QWidget {
  Q_OBJECT

 public:
  explicit NetworkAnalysisPanel(QWidget* parent = nullptr);

  // Null clears (a design that does not compile).
  void setCompiled(const std::shared_ptr<const CompiledPlan>& plan);
  void setStale(bool stale);
  // The table as CSV (layer_table_csv); false with `error` saying why.
  bool exportCsv(const QString& path, QString* error) const;

  LayerTableModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  QString captionText() const;

 signals:
  void layerActivated(int node);

 private:
  void chooseExport();
  void updateCaption();

  LayerTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QLabel* caption_;
  QPushButton* export_;
  QTableView* table_;
  std::string project_;
  bool stale_ = false;
};

}  // namespace tr::gui

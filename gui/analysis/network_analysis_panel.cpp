// SPDX-License-Identifier: GPL-3.0-or-later
#include "analysis/network_analysis_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <renaissance/layer_analysis.h>
#include "analysis/layer_table_model.h"
#include "designer/layer_catalog.h"
#include "widgets/count_text.h"

namespace tr::gui {

NetworkAnalysisPanel::NetworkAnalysisPanel(QWidget* parent)
    : QWidget(parent),
      model_(new LayerTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      caption_(new QLabel(this)),
      export_(new QPushButton(tr("Export CSV…"), this)),
      table_(new QTableView(this)) {
  caption_->setObjectName(QStringLiteral("analysisCaption"));
  caption_->setWordWrap(true);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  export_->setObjectName(QStringLiteral("analysisExport"));
  export_->setToolTip(tr("Write the table as CSV, one row a layer"));
  connect(export_, &QPushButton::clicked, this, &NetworkAnalysisPanel::chooseExport);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(LayerTableModel::SortRole);
  table_->setObjectName(QStringLiteral("analysisTable"));
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(LayerTableModel::Layer, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setWordWrap(false);
  table_->verticalHeader()->hide();
  // Whole texts, the warnings last and taking the rest; the table scrolls sideways.
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    emit layerActivated(index.data(LayerTableModel::NodeRole).toInt());
  });
  // It shares the bottom with the Problems list, which keeps its rows for
  // the views at 1280x800: a header and a row or two are its least.
  table_->setMinimumHeight(3 * table_->fontMetrics().height());
  auto* top = new QHBoxLayout;
  top->setContentsMargins(0, 0, 0, 0);
  top->addWidget(caption_, 1);
  top->addWidget(export_, 0, Qt::AlignTop);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->setSpacing(2);
  layout->addLayout(top);
  layout->addWidget(table_, 1);
  setCompiled(nullptr);
}

void NetworkAnalysisPanel::setCompiled(const std::shared_ptr<const CompiledPlan>& plan) {
  stale_ = false;
  if (!plan || plan->empty()) {
    project_.clear();
    model_->setTable({});
  } else {
    project_ = plan->project().name;
    model_->setTable(analyze_layers(*plan));
  }
  export_->setEnabled(model_->rowCount() > 0);
  updateCaption();
}

void NetworkAnalysisPanel::setStale(bool stale) {
  if (stale_ == stale) return;
  stale_ = stale;
  updateCaption();
}

QString NetworkAnalysisPanel::captionText() const {
  return caption_->text();
}

void NetworkAnalysisPanel::updateCaption() {
  if (model_->rowCount() == 0) {
    caption_->setText(
        tr("Compile the design (F5) to analyse it layer by layer: output shapes, "
           "parameters, FLOPs, each variant's activation bytes and warnings."));
    return;
  }
  const LayerTable& t = model_->table();
  QString text =
      tr("%1: %2, %3 parameters, %4 forward FLOPs per device; %5")
          .arg(QString::fromStdString(project_),
               count_text(static_cast<qint64>(t.rows.size()), tr("%1 layer"), tr("%1 layers")),
               grouped_number(t.parameters), grouped_number(t.flops),
               count_text(model_->warningCount(), tr("%1 warning"), tr("%1 warnings")));
  if (stale_) text += tr(" · the design changed since: compile (F5) to bring it up to date");
  caption_->setText(text);
}

bool NetworkAnalysisPanel::exportCsv(const QString& path, QString* error) const {
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly)) {
    if (error) *error = tr("Cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  f.write(QByteArray::fromStdString(layer_table_csv(model_->table())));
  if (!f.commit()) {
    if (error) *error = tr("Cannot write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

void NetworkAnalysisPanel::chooseExport() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export the network analysis"),
      QString::fromStdString(project_) + QStringLiteral("-layers.csv"), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(path, &error)) caption_->setText(error);
}

}  // namespace tr::gui

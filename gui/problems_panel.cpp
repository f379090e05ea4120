// SPDX-License-Identifier: GPL-3.0-or-later
#include "problems_panel.h"

#include <QHeaderView>
#include <QStyle>

namespace tr::gui {

namespace {

enum Column { kSource, kNode, kField, kMessage };
constexpr int kNodeIdRole = Qt::UserRole;

}  // namespace

ProblemsPanel::ProblemsPanel(QWidget* parent) : QTreeWidget(parent) {
  setRootIsDecorated(false);
  setAlternatingRowColors(true);
  setUniformRowHeights(true);
  setHeaderLabels({tr("From"), tr("Node"), tr("Field"), tr("Problem")});
  header()->setStretchLastSection(true);
  header()->setSectionResizeMode(kSource, QHeaderView::ResizeToContents);
  header()->setSectionResizeMode(kNode, QHeaderView::ResizeToContents);
  header()->setSectionResizeMode(kField, QHeaderView::ResizeToContents);
  // A click is enough: the list is short and selecting a node is harmless.
  connect(this, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
    const QString id = item->data(kNode, kNodeIdRole).toString();
    if (!id.isEmpty()) emit nodeRequested(id);
  });
  connect(this, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString id = item->data(kNode, kNodeIdRole).toString();
    if (!id.isEmpty()) emit nodeRequested(id);
  });
}

void ProblemsPanel::setDesignProblems(const std::vector<Diagnostic>& problems) {
  design_ = problems;
  rebuild();
}

void ProblemsPanel::setCompileProblems(const std::vector<Diagnostic>& problems) {
  compile_ = problems;
  rebuild();
}

void ProblemsPanel::rebuild() {
  clear();
  auto add = [this](const Diagnostic& d, const QString& source) {
    auto* item = new QTreeWidgetItem(this);
    item->setText(kSource, source);
    item->setText(kNode, QString::fromStdString(d.node_id.empty() ? d.node : d.node_id));
    item->setData(kNode, kNodeIdRole, QString::fromStdString(d.node_id));
    item->setText(kField, QString::fromStdString(d.field));
    item->setText(kMessage, QString::fromStdString(d.message));
    item->setToolTip(kMessage, QString::fromStdString(d.str()));
    item->setIcon(kSource, style()->standardIcon(QStyle::SP_MessageBoxWarning));
  };
  for (const Diagnostic& d : design_) add(d, tr("design"));
  for (const Diagnostic& d : compile_) add(d, tr("compile"));
  emit countChanged(topLevelItemCount());
}

}  // namespace tr::gui

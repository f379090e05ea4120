// SPDX-License-Identifier: GPL-3.0-or-later
#include "problems_panel.h"

#include <QHeaderView>
#include <QStyle>

namespace tr::gui {

namespace {

enum Column { kSource, kNode, kField, kMessage };
constexpr int kNodeIdRole = Qt::UserRole;
constexpr int kFieldRole = Qt::UserRole + 1;
constexpr int kBlockingRole = Qt::UserRole + 2;

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
  // A click is enough: the list is short and showing a node is harmless.
  connect(this, &QTreeWidget::itemClicked, this, &ProblemsPanel::activate);
  connect(this, &QTreeWidget::itemActivated, this, &ProblemsPanel::activate);
}

void ProblemsPanel::activate(QTreeWidgetItem* item) {
  const QString id = item->data(kNode, kNodeIdRole).toString();
  const QString field = item->data(kField, kFieldRole).toString();
  if (!id.isEmpty())
    emit nodeRequested(id, field);
  else if (!field.isEmpty())
    emit settingRequested(field);
}

void ProblemsPanel::setFieldNamer(std::function<QString(const QString&)> namer) {
  namer_ = std::move(namer);
  rebuild();
}

void ProblemsPanel::setTrainingProblems(const std::vector<Diagnostic>& blocking,
                                        const std::vector<Diagnostic>& notes) {
  training_ = blocking;
  notes_ = notes;
  rebuild();
}

int ProblemsPanel::blockingCount() const {
  int n = 0;
  for (int i = 0; i < topLevelItemCount(); ++i) n += isBlocking(i) ? 1 : 0;
  return n;
}

QString ProblemsPanel::fieldKey(int row) const {
  const QTreeWidgetItem* item = topLevelItem(row);
  return item ? item->data(kField, kFieldRole).toString() : QString();
}

bool ProblemsPanel::isBlocking(int row) const {
  const QTreeWidgetItem* item = topLevelItem(row);
  return item && item->data(kSource, kBlockingRole).toBool();
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
  auto add = [this](const Diagnostic& d, const QString& source, bool blocking) {
    auto* item = new QTreeWidgetItem(this);
    item->setText(kSource, source);
    item->setText(kNode, QString::fromStdString(d.node_id.empty() ? d.node : d.node_id));
    item->setData(kNode, kNodeIdRole, QString::fromStdString(d.node_id));
    const QString key = QString::fromStdString(d.field);
    const QString name = namer_ ? namer_(key) : QString();
    item->setText(kField, name.isEmpty() ? key : name);
    if (!key.isEmpty()) item->setToolTip(kField, tr("In the project file: %1").arg(key));
    item->setData(kField, kFieldRole, QString::fromStdString(d.field));
    item->setData(kSource, kBlockingRole, blocking);
    item->setText(kMessage, QString::fromStdString(d.message));
    item->setToolTip(kMessage, QString::fromStdString(d.str()));
    item->setIcon(kSource, style()->standardIcon(blocking ? QStyle::SP_MessageBoxCritical
                                                          : QStyle::SP_MessageBoxWarning));
    item->setToolTip(
        kSource, blocking ? tr("Blocks training: fix it first") : tr("A note: training can start"));
  };
  for (const Diagnostic& d : design_) add(d, tr("design"), true);
  for (const Diagnostic& d : compile_) add(d, tr("compile"), true);
  for (const Diagnostic& d : training_) add(d, tr("training"), true);
  for (const Diagnostic& d : notes_) add(d, tr("training"), false);
  emit countChanged(topLevelItemCount());
}

}  // namespace tr::gui

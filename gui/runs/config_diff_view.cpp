// SPDX-License-Identifier: GPL-3.0-or-later
// The grouped configuration differences with their filter box.
#include "runs/config_diff_view.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

#include "runs/config_diff_model.h"

namespace tr::gui {

ConfigDiffView::ConfigDiffView(QWidget* parent)
    : QWidget(parent),
      model_(new ConfigDiffModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      filter_(new QLineEdit(this)),
      tree_(new QTreeView(this)) {
  proxy_->setSourceModel(model_);
  // A setting matches by its name or any run's value; a group shows while any of its rows match.
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setRecursiveFilteringEnabled(true);

  filter_->setObjectName(QStringLiteral("runsConfigFilter"));
  filter_->setPlaceholderText(tr("Filter settings and values"));
  filter_->setClearButtonEnabled(true);
  connect(filter_, &QLineEdit::textChanged, this, &ConfigDiffView::filterChanged);

  tree_->setObjectName(QStringLiteral("runsConfigDiff"));
  tree_->setModel(proxy_);
  tree_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  tree_->setSelectionBehavior(QAbstractItemView::SelectRows);
  tree_->setAlternatingRowColors(true);
  tree_->setUniformRowHeights(true);
  tree_->setTextElideMode(Qt::ElideRight);
  tree_->setWordWrap(false);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionsMovable(false);
  tree_->header()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(filter_);
  layout->addWidget(tree_, 1);
}

void ConfigDiffView::setComparison(const store::RunComparison& comparison) {
  model_->setComparison(comparison);
  expandAsDefault();
}

void ConfigDiffView::clear() {
  model_->clear();
}

void ConfigDiffView::expandAsDefault() {
  const int groups = proxy_->rowCount();
  for (int g = 0; g < groups; ++g) {
    // A group's title and count take the whole row, not a narrow name column.
    tree_->setFirstColumnSpanned(g, {}, true);
    const QModelIndex group = proxy_->index(g, 0);
    const bool open = groups == 1 || !filter_->text().trimmed().isEmpty() ||
                      proxy_->rowCount(group) <= kOpenGroupRows;
    tree_->setExpanded(group, open);
  }
  fitColumns();
}

void ConfigDiffView::filterChanged(const QString& text) {
  proxy_->setFilterFixedString(text.trimmed());
  // What matched is shown, however many rows its group has.
  expandAsDefault();
}

void ConfigDiffView::fitColumns() {
  QHeaderView* header = tree_->header();
  const int columns = proxy_->columnCount();
  if (columns == 0) return;
  // The names whole, whatever the pane's width ("op…" named nothing); the
  // runs' columns share what they leave, a value too long for its column
  // elided with the whole of it in its tooltip.
  header->setSectionResizeMode(QHeaderView::Stretch);
  header->setSectionResizeMode(0, QHeaderView::ResizeToContents);
}

}  // namespace tr::gui

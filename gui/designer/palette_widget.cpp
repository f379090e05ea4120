// SPDX-License-Identifier: GPL-3.0-or-later
#include "palette_widget.h"

#include <QMimeData>
#include <QStyle>
#include <map>

#include "designer_view.h"
#include "layer_catalog.h"

namespace tr::gui {

namespace {

constexpr int kTypeRole = Qt::UserRole;

QString type_name(LayerType t) {
  const std::string_view n = layer_type_name(t);
  return QString::fromUtf8(n.data(), static_cast<int>(n.size()));
}

}  // namespace

PaletteWidget::PaletteWidget(QWidget* parent) : QTreeWidget(parent) {
  setHeaderHidden(true);
  setDragEnabled(true);
  setDragDropMode(QAbstractItemView::DragOnly);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setRootIsDecorated(false);
  setIndentation(10);
  std::map<LayerGroup, QTreeWidgetItem*> groups;
  for (LayerType t : kAllLayerTypes) {
    const LayerGroup g = layer_group(t);
    QTreeWidgetItem*& group = groups[g];
    if (!group) {
      group = new QTreeWidgetItem(this, {layer_group_name(g)});
      group->setFlags(Qt::ItemIsEnabled);
      QFont f = group->font(0);
      f.setBold(true);
      group->setFont(0, f);
    }
    auto* item = new QTreeWidgetItem(group, {type_name(t)});
    item->setData(0, kTypeRole, static_cast<int>(t));
    item->setToolTip(0, layer_description(t) + tr("\nDrag onto the canvas, or double-click."));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
    QPixmap swatch(12, 12);
    swatch.fill(layer_colour(t));
    item->setIcon(0, QIcon(swatch));
  }
  // Keep the tree in the engine's order of layer kinds, all groups open.
  expandAll();
  connect(this, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QVariant v = item->data(0, kTypeRole);
    if (v.isValid()) emit layerActivated(static_cast<LayerType>(v.toInt()));
  });
  expandAll();
  // The dock is at least as wide as the longest name, so none is cut.
  resizeColumnToContents(0);
  setMinimumWidth(sizeHintForColumn(0) + indentation() + 2 * frameWidth() +
                  style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 8);
}

QTreeWidgetItem* PaletteWidget::itemFor(LayerType type) const {
  for (int g = 0; g < topLevelItemCount(); ++g) {
    QTreeWidgetItem* group = topLevelItem(g);
    for (int i = 0; i < group->childCount(); ++i)
      if (group->child(i)->data(0, kTypeRole).toInt() == static_cast<int>(type))
        return group->child(i);
  }
  return nullptr;
}

void PaletteWidget::startDrag(Qt::DropActions) {
  // Always a copy: a move would take the entry out of the palette.
  QTreeWidget::startDrag(Qt::CopyAction);
  // The drag is over (dropped or not): the entry was a handle, not a choice
  // that should stay highlighted.
  clearSelection();
  setCurrentItem(nullptr);
}

QStringList PaletteWidget::mimeTypes() const {
  return {QString::fromLatin1(DesignerView::kLayerMimeType)};
}

QMimeData* PaletteWidget::mimeData(const QList<QTreeWidgetItem*>& items) const {
  if (items.isEmpty()) return nullptr;
  const QVariant v = items.front()->data(0, kTypeRole);
  if (!v.isValid()) return nullptr;
  auto* mime = new QMimeData;
  mime->setData(DesignerView::kLayerMimeType,
                type_name(static_cast<LayerType>(v.toInt())).toUtf8());
  return mime;
}

}  // namespace tr::gui

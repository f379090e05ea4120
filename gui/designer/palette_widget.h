// SPDX-License-Identifier: GPL-3.0-or-later
// PaletteWidget: the layer types, grouped, to drag onto the canvas (or
// double-click to add one in the middle of the view).
#pragma once

#include <QTreeWidget>

#include <renaissance/layer_type.h>

namespace tr::gui {

class PaletteWidget : public QTreeWidget {
  Q_OBJECT

 public:
  explicit PaletteWidget(QWidget* parent = nullptr);

  // The entry of `type`, for tests and keyboard users.
  QTreeWidgetItem* itemFor(LayerType type) const;
  // What dragging `type` carries (the caller owns it), for tests that
  // deliver the drop events themselves.
  QMimeData* dragPayload(LayerType type) const { return mimeData({itemFor(type)}); }

 signals:
  void layerActivated(LayerType type);

 protected:
  QStringList mimeTypes() const override;
  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override;
  void startDrag(Qt::DropActions supportedActions) override;
};

}  // namespace tr::gui

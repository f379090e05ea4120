// SPDX-License-Identifier: GPL-3.0-or-later
#include "port_item.h"

#include <QApplication>
#include <QBrush>
#include <QPalette>
#include <QPen>

#include "node_item.h"

namespace tr::gui {

PortItem::PortItem(NodeItem* node, bool input, int port)
    : QGraphicsEllipseItem(-kRadius, -kRadius, 2 * kRadius, 2 * kRadius, node),
      node_(node),
      input_(input),
      port_(port) {
  setAcceptHoverEvents(true);
  setCursor(Qt::CrossCursor);
  setZValue(1);
  setToolTip(input ? QObject::tr("input port %1: drag to an output port to connect").arg(port)
                   : QObject::tr("output: drag to an input port to connect"));
  updateBrush();
}

void PortItem::setHighlighted(bool on) {
  highlighted_ = on;
  updateBrush();
}

void PortItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event) {
  hovered_ = true;
  updateBrush();
  QGraphicsEllipseItem::hoverEnterEvent(event);
}

void PortItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
  hovered_ = false;
  updateBrush();
  QGraphicsEllipseItem::hoverLeaveEvent(event);
}

void PortItem::updateBrush() {
  const QPalette pal = QApplication::palette();
  setPen(QPen(pal.color(QPalette::Text), 1.2));
  if (highlighted_ || hovered_)
    setBrush(pal.color(QPalette::Highlight));
  else
    setBrush(input_ ? pal.color(QPalette::Base) : pal.color(QPalette::Mid));
}

}  // namespace tr::gui

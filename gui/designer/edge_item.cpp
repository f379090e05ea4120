// SPDX-License-Identifier: GPL-3.0-or-later
#include "edge_item.h"

#include <QApplication>
#include <QPainter>
#include <QPainterPathStroker>
#include <QPalette>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>
#include <numbers>

#include "node_item.h"
#include "port_item.h"

namespace tr::gui {

QPainterPath connection_path(QPointF start, QPointF end) {
  // Vertical tangents: data flows top to bottom, so curves leave an output
  // downwards and enter an input from above, also when the target is higher.
  const double bend = std::max(30.0, std::abs(end.y() - start.y()) * 0.5);
  QPainterPath path(start);
  // A connection that skips layers stacked in one column (an identity
  // shortcut) would run behind them: it bulges out to the right instead.
  const double dy = end.y() - start.y();
  if (dy > 1.5 * NodeItem::kHeight + 40 && std::abs(end.x() - start.x()) < NodeItem::kWidth) {
    const double out = NodeItem::kWidth * 0.9;
    path.cubicTo(start + QPointF(out, 40), end + QPointF(out, -40), end);
    return path;
  }
  path.cubicTo(start + QPointF(0, bend), end - QPointF(0, bend), end);
  return path;
}

EdgeItem::EdgeItem(int index, NodeItem* from, int fromPort, NodeItem* to, int toPort)
    : index_(index),
      from_(from),
      to_(to),
      fromPort_(fromPort),
      toPort_(toPort),
      label_(new QGraphicsSimpleTextItem(this)) {
  setFlag(ItemIsSelectable);
  setPen(QPen(Qt::black, 4));  // not drawn: it widens boundingRect() to the selected stroke
  setZValue(-1);
  QFont f = label_->font();
  f.setPointSizeF(f.pointSizeF() * 0.9);
  label_->setFont(f);
  label_->setBrush(QApplication::palette().color(QPalette::Text));
  from->attach(this);
  to->attach(this);
  updatePath();
}

void EdgeItem::setShapeText(const QString& text) {
  label_->setText(text);
  updatePath();
}

void EdgeItem::updatePath() {
  const PortItem* out = from_->outputPort(fromPort_);
  const PortItem* in = to_->inputPort(toPort_);
  if (!out || !in) return;
  const QPointF a = out->scenePos(), b = in->scenePos();
  setPath(connection_path(a, b));
  const QPointF mid = path().pointAtPercent(0.5);
  label_->setPos(mid + QPointF(6, -label_->boundingRect().height() / 2));
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path());
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QPalette pal = QApplication::palette();
  const bool selected = option->state & QStyle::State_Selected;
  const QColor colour = selected ? pal.color(QPalette::Highlight) : pal.color(QPalette::Text);
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(colour, selected ? 3 : 1.5));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path());
  // Arrowhead at the input port.
  const QPointF tip = path().pointAtPercent(1.0);
  const double angle = path().angleAtPercent(0.98) * std::numbers::pi / 180.0;
  const QPointF dir(std::cos(angle), -std::sin(angle));
  const QPointF normal(-dir.y(), dir.x());
  const QPointF base = tip - dir * 9 - dir * PortItem::kRadius;
  QPolygonF head;
  head << tip - dir * PortItem::kRadius << base + normal * 4.5 << base - normal * 4.5;
  painter->setBrush(colour);
  painter->setPen(Qt::NoPen);
  painter->drawPolygon(head);
}

}  // namespace tr::gui

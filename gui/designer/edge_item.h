// SPDX-License-Identifier: GPL-3.0-or-later
// EdgeItem: a connection from an output port to an input port, drawn as a
// curve with an arrow, labelled with the tensor shape that flows along it.
#pragma once

#include <QGraphicsPathItem>
#include <QGraphicsSimpleTextItem>

namespace tr::gui {

class NodeItem;

class EdgeItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 3 };

  EdgeItem(int index, NodeItem* from, int fromPort, NodeItem* to, int toPort);
  int type() const override { return Type; }

  int index() const { return index_; }
  NodeItem* from() const { return from_; }
  NodeItem* to() const { return to_; }
  void setShapeText(const QString& text);
  QString shapeText() const { return label_->text(); }
  void updatePath();

  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  int index_;
  NodeItem *from_, *to_;
  int fromPort_, toPort_;
  QGraphicsSimpleTextItem* label_;
};

// The path of a connection between two scene points, shared with the
// rubber line drawn while a connection is being dragged.
QPainterPath connection_path(QPointF start, QPointF end);

}  // namespace tr::gui

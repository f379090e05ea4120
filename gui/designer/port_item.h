// SPDX-License-Identifier: GPL-3.0-or-later
// PortItem: an input (top edge) or output (bottom edge) port of a node on the
// canvas; a connection is drawn by dragging from one port to another.
#pragma once

#include <QGraphicsEllipseItem>

namespace tr::gui {

class NodeItem;

class PortItem : public QGraphicsEllipseItem {
 public:
  enum { Type = UserType + 1 };
  static constexpr double kRadius = 6;

  PortItem(NodeItem* node, bool input, int port);
  int type() const override { return Type; }

  NodeItem* node() const { return node_; }
  bool isInput() const { return input_; }
  int port() const { return port_; }
  // Shown while a connection is dragged over a port that accepts it.
  void setHighlighted(bool on);

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;

 private:
  void updateBrush();

  NodeItem* node_;
  bool input_;
  int port_;
  bool hovered_ = false, highlighted_ = false;
};

}  // namespace tr::gui

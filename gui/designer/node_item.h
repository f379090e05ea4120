// SPDX-License-Identifier: GPL-3.0-or-later
// NodeItem: one layer on the canvas: its id and type, a summary of its
// parameters, its parameter count and output shape, its ports, and a red
// frame with the messages as tooltip when the analysis found problems.
#pragma once

#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QStringList>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape_inference.h>

namespace tr::gui {

class EdgeItem;
class PortItem;

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  static constexpr double kWidth = 184;
  static constexpr double kHeight = 62;

  NodeItem(int index, const LayerNode& node);
  int type() const override { return Type; }

  int index() const { return index_; }
  const QString& nodeId() const { return id_; }
  // Parameters, shapes and problems (messages) as the document has them now.
  void setInfo(const LayerNode& node, const NodeAnalysis* analysis, const QStringList& problems);
  bool hasProblems() const { return !problems_.isEmpty(); }
  // How the compiled plan splits it over the tensor ranks ("column", "row",
  // "heads", "channels"; empty: whole), shown as a coloured band and tag.
  void setTensorSplit(const QString& split);
  const QString& tensorSplit() const { return split_; }
  // The texts paint() must cut short (elide) with `font` as the view's: none
  // for a readable node.
  QStringList cutTexts(const QFont& font) const;

  PortItem* inputPort(int port) const;
  PortItem* outputPort(int port) const;
  void attach(EdgeItem* edge) { edges_.push_back(edge); }

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;

 private:
  // The type as the node shows it beside the id: its name, or its
  // abbreviation where the name would cut the id short (the tooltip has both).
  QString shownType(const QFontMetricsF& title, const QFontMetricsF& small) const;

  int index_;
  LayerType layerType_;
  QString id_, typeName_, typeAbbreviation_, summary_, details_;
  QStringList problems_;
  QString split_;
  std::vector<PortItem*> inputs_, outputs_;
  std::vector<EdgeItem*> edges_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// DesignerScene: the canvas of the node editor. It mirrors the document's
// model graph as NodeItems and EdgeItems, refreshes shapes, parameter counts
// and problems after every analysis, turns mouse drags of nodes into merged
// move commands and drags between ports into connections.
#pragma once

#include <QGraphicsScene>
#include <QHash>
#include <QPointF>
#include <vector>

namespace tr::gui {

class EdgeItem;
class ModelEditor;
class NodeItem;
class PortItem;
class ProjectDocument;

class DesignerScene : public QGraphicsScene {
  Q_OBJECT

 public:
  DesignerScene(ProjectDocument* doc, ModelEditor* editor, QObject* parent = nullptr);
  ~DesignerScene() override;

  NodeItem* nodeItem(int index) const;
  NodeItem* nodeItem(const QString& id) const;
  EdgeItem* edgeItem(int index) const;
  int nodeCount() const { return static_cast<int>(nodes_.size()); }
  int edgeCount() const { return static_cast<int>(edges_.size()); }

  std::vector<int> selectedNodes() const;
  std::vector<int> selectedEdges() const;
  void selectNodes(const std::vector<int>& nodes);
  // The node selected alone, or -1.
  int currentNode() const;
  // How the last compiled plan splits each design node over the tensor
  // ranks ("column", "row", "heads", ...; by node id, none for a whole
  // node): the nodes show it until the next compile says otherwise.
  void setTensorSplits(const QHash<QString, QString>& splits);

 signals:
  void currentNodeChanged(int index);
  // A connection the user tried to draw that cannot exist, and why.
  void refused(const QString& why);

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;

 private:
  void rebuild();
  void refreshAnalysis();
  void refreshNode(int index);
  void syncPositions();
  PortItem* portAt(QPointF scenePos) const;
  bool canConnect(const PortItem* a, const PortItem* b) const;
  void pushDragStep();

  ProjectDocument* doc_;
  ModelEditor* editor_;
  std::vector<NodeItem*> nodes_;
  std::vector<EdgeItem*> edges_;
  QHash<QString, QString> splits_;
  bool rebuilding_ = false;

  // A node drag in progress: its serial and where each node stood at the last step.
  int dragSerial_ = -1;
  QHash<int, QPointF> dragLast_;
  // A connection being drawn from this port.
  PortItem* connectFrom_ = nullptr;
  QGraphicsPathItem* rubber_ = nullptr;
  PortItem* connectTarget_ = nullptr;
};

}  // namespace tr::gui

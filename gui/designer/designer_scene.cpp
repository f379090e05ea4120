// SPDX-License-Identifier: GPL-3.0-or-later
#include "designer_scene.h"

#include <QApplication>
#include <QGraphicsSceneMouseEvent>
#include <QPalette>
#include <QPen>

#include "edge_item.h"
#include "layer_catalog.h"
#include "model_editor.h"
#include "node_item.h"
#include "port_item.h"
#include "project_document.h"

namespace tr::gui {

DesignerScene::DesignerScene(ProjectDocument* doc, ModelEditor* editor, QObject* parent)
    : QGraphicsScene(parent), doc_(doc), editor_(editor) {
  connect(doc_, &ProjectDocument::projectReset, this, &DesignerScene::rebuild);
  connect(doc_, &ProjectDocument::graphChanged, this, &DesignerScene::rebuild);
  connect(doc_, &ProjectDocument::analysisChanged, this, &DesignerScene::refreshAnalysis);
  connect(doc_, &ProjectDocument::positionsChanged, this, &DesignerScene::syncPositions);
  connect(this, &QGraphicsScene::selectionChanged, this, [this] {
    if (!rebuilding_) emit currentNodeChanged(currentNode());
  });
  rebuild();
}

DesignerScene::~DesignerScene() {
  // Deleting the items changes the selection; nobody may hear of it now.
  blockSignals(true);
  rebuilding_ = true;
  clear();
}

NodeItem* DesignerScene::nodeItem(int index) const {
  return index >= 0 && static_cast<size_t>(index) < nodes_.size()
             ? nodes_[static_cast<size_t>(index)]
             : nullptr;
}

NodeItem* DesignerScene::nodeItem(const QString& id) const {
  for (NodeItem* n : nodes_)
    if (n->nodeId() == id) return n;
  return nullptr;
}

EdgeItem* DesignerScene::edgeItem(int index) const {
  for (EdgeItem* e : edges_)
    if (e->index() == index) return e;
  return nullptr;
}

std::vector<int> DesignerScene::selectedNodes() const {
  std::vector<int> out;
  for (NodeItem* n : nodes_)
    if (n->isSelected()) out.push_back(n->index());
  return out;
}

std::vector<int> DesignerScene::selectedEdges() const {
  std::vector<int> out;
  for (EdgeItem* e : edges_)
    if (e->isSelected()) out.push_back(e->index());
  return out;
}

void DesignerScene::selectNodes(const std::vector<int>& nodes) {
  clearSelection();
  for (int i : nodes)
    if (NodeItem* n = nodeItem(i)) n->setSelected(true);
}

int DesignerScene::currentNode() const {
  const std::vector<int> sel = selectedNodes();
  return sel.size() == 1 && selectedEdges().empty() ? sel.front() : -1;
}

void DesignerScene::setTensorSplits(const QHash<QString, QString>& splits) {
  splits_ = splits;
  for (NodeItem* item : nodes_) item->setTensorSplit(splits_.value(item->nodeId()));
}

void DesignerScene::rebuild() {
  QStringList selected;
  for (int i : selectedNodes()) selected << nodes_[static_cast<size_t>(i)]->nodeId();
  rebuilding_ = true;
  // clear() deletes every item, the rubber line and port pointers included.
  connectFrom_ = connectTarget_ = nullptr;
  rubber_ = nullptr;
  dragSerial_ = -1;
  clear();
  nodes_.clear();
  edges_.clear();
  const ModelGraph& g = doc_->project().model;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto* item = new NodeItem(static_cast<int>(i), g.nodes[i]);
    item->setPos(g.nodes[i].x, g.nodes[i].y);
    item->setTensorSplit(splits_.value(item->nodeId()));
    addItem(item);
    nodes_.push_back(item);
  }
  const int n = static_cast<int>(g.nodes.size());
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const Edge& e = g.edges[i];
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n) continue;
    NodeItem* from = nodes_[static_cast<size_t>(e.from)];
    NodeItem* to = nodes_[static_cast<size_t>(e.to)];
    if (!from->outputPort(e.from_port) || !to->inputPort(e.to_port)) continue;
    auto* item = new EdgeItem(static_cast<int>(i), from, e.from_port, to, e.to_port);
    addItem(item);
    edges_.push_back(item);
  }
  refreshAnalysis();
  for (NodeItem* item : nodes_)
    if (selected.contains(item->nodeId())) item->setSelected(true);
  rebuilding_ = false;
  // Always: indices may have shifted under an unchanged selection.
  emit currentNodeChanged(currentNode());
}

void DesignerScene::refreshAnalysis() {
  const ModelGraph& g = doc_->project().model;
  const ModelAnalysis& a = doc_->analysis();
  if (nodes_.size() != g.nodes.size() || a.nodes.size() != g.nodes.size()) return;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    QStringList problems;
    for (int p : doc_->problemsOf(static_cast<int>(i)))
      problems << QString::fromStdString(a.problems[static_cast<size_t>(p)].message);
    nodes_[i]->setInfo(g.nodes[i], &a.nodes[i], problems);
  }
  for (EdgeItem* e : edges_) {
    const NodeAnalysis& from = a.nodes[static_cast<size_t>(e->from()->index())];
    e->setShapeText(from.known ? shape_text(from.output) : QStringLiteral("?"));
  }
}

void DesignerScene::syncPositions() {
  const ModelGraph& g = doc_->project().model;
  if (nodes_.size() != g.nodes.size()) return;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const QPointF p(g.nodes[i].x, g.nodes[i].y);
    if (nodes_[i]->pos() != p) nodes_[i]->setPos(p);
  }
}

PortItem* DesignerScene::portAt(QPointF scenePos) const {
  // A little tolerance: ports are small targets.
  const QRectF area(scenePos - QPointF(4, 4), QSizeF(8, 8));
  for (QGraphicsItem* item : items(area))
    if (item->type() == PortItem::Type) return static_cast<PortItem*>(item);
  return nullptr;
}

bool DesignerScene::canConnect(const PortItem* a, const PortItem* b) const {
  return a && b && a->node() != b->node() && a->isInput() != b->isInput();
}

void DesignerScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    if (PortItem* port = portAt(event->scenePos())) {
      connectFrom_ = port;
      rubber_ = addPath(connection_path(port->scenePos(), event->scenePos()));
      QPen pen(QApplication::palette().color(QPalette::Highlight), 2, Qt::DashLine);
      rubber_->setPen(pen);
      rubber_->setZValue(10);
      event->accept();
      return;
    }
  }
  QGraphicsScene::mousePressEvent(event);
  if (event->button() == Qt::LeftButton && mouseGrabberItem() &&
      mouseGrabberItem()->type() == NodeItem::Type) {
    dragSerial_ = editor_->nextDragSerial();
    dragLast_.clear();
    for (NodeItem* n : nodes_)
      if (n->isSelected()) dragLast_.insert(n->index(), n->pos());
  }
}

void DesignerScene::mouseMoveEvent(QGraphicsSceneMouseEvent* event) {
  if (connectFrom_) {
    PortItem* target = portAt(event->scenePos());
    if (!canConnect(connectFrom_, target)) target = nullptr;
    if (target != connectTarget_) {
      if (connectTarget_) connectTarget_->setHighlighted(false);
      if (target) target->setHighlighted(true);
      connectTarget_ = target;
    }
    const QPointF end = target ? target->scenePos() : event->scenePos();
    rubber_->setPath(connectFrom_->isInput() ? connection_path(end, connectFrom_->scenePos())
                                             : connection_path(connectFrom_->scenePos(), end));
    event->accept();
    return;
  }
  QGraphicsScene::mouseMoveEvent(event);
  if (dragSerial_ >= 0 && (event->buttons() & Qt::LeftButton)) pushDragStep();
}

void DesignerScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
  if (connectFrom_) {
    PortItem* from = connectFrom_;
    PortItem* target = portAt(event->scenePos());
    if (connectTarget_) connectTarget_->setHighlighted(false);
    delete rubber_;
    rubber_ = nullptr;
    connectFrom_ = connectTarget_ = nullptr;
    event->accept();
    if (!target || target == from) return;
    if (target->node() == from->node()) {
      emit refused(tr("%1 cannot feed itself").arg(from->node()->nodeId()));
      return;
    }
    if (target->isInput() == from->isInput()) {
      emit refused(from->isInput() ? tr("Connect an input port to an output port")
                                   : tr("Connect an output port to an input port"));
      return;
    }
    const PortItem* out = from->isInput() ? target : from;
    const PortItem* in = from->isInput() ? from : target;
    // May rebuild the scene: nothing here touches an item afterwards.
    editor_->connectPorts(out->node()->index(), out->port(), in->node()->index(), in->port());
    return;
  }
  QGraphicsScene::mouseReleaseEvent(event);
  if (dragSerial_ >= 0) {
    pushDragStep();
    dragSerial_ = -1;
  }
}

void DesignerScene::pushDragStep() {
  std::vector<NodePosition> from, to;
  for (auto it = dragLast_.begin(); it != dragLast_.end(); ++it) {
    NodeItem* n = nodeItem(it.key());
    if (!n || n->pos() == it.value()) continue;
    from.push_back({it.key(), it.value().x(), it.value().y()});
    to.push_back({it.key(), n->pos().x(), n->pos().y()});
    it.value() = n->pos();
  }
  if (!to.empty()) editor_->moveNodes(dragSerial_, from, to);
}

}  // namespace tr::gui

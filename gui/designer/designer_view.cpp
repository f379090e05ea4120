// SPDX-License-Identifier: GPL-3.0-or-later
#include "designer_view.h"

#include <QApplication>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <optional>

#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "designer_scene.h"
#include "model_editor.h"
#include "model_edits.h"
#include "node_item.h"
#include "project_document.h"

namespace tr::gui {

namespace {

constexpr double kMinZoom = 0.1, kMaxZoom = 4.0;
constexpr double kReadableZoom = 0.8;
constexpr double kPasteStep = 30;
constexpr double kSceneMargin = 800;

std::optional<LayerType> layer_from_mime(const QMimeData* mime) {
  if (!mime || !mime->hasFormat(DesignerView::kLayerMimeType)) return std::nullopt;
  return layer_type_from_name(mime->data(DesignerView::kLayerMimeType).toStdString());
}

}  // namespace

DesignerView::DesignerView(ProjectDocument* doc, ModelEditor* editor, QWidget* parent)
    : QGraphicsView(parent),
      doc_(doc),
      editor_(editor),
      scene_(new DesignerScene(doc, editor, this)) {
  setScene(scene_);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::RubberBandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setAcceptDrops(true);
  setFocusPolicy(Qt::StrongFocus);
  connect(scene_, &DesignerScene::refused, this, &DesignerView::refused);
  connect(doc_, &ProjectDocument::projectReset, this, &DesignerView::updateSceneRect);
  connect(doc_, &ProjectDocument::graphChanged, this, &DesignerView::updateSceneRect);
  connect(doc_, &ProjectDocument::positionsChanged, this, &DesignerView::updateSceneRect);
  updateSceneRect();
}

double DesignerView::zoomFactor() const {
  return transform().m11();
}

void DesignerView::updateSceneRect() {
  QRectF r = scene_->itemsBoundingRect();
  if (r.isEmpty()) r = QRectF(0, 0, NodeItem::kWidth, NodeItem::kHeight);
  setSceneRect(r.adjusted(-kSceneMargin, -kSceneMargin, kSceneMargin, kSceneMargin));
}

int DesignerView::dropLayer(LayerType type, QPointF scenePos) {
  // The cursor holds the node by its middle, as it held the palette entry.
  const QPointF topLeft = scenePos - QPointF(NodeItem::kWidth / 2, NodeItem::kHeight / 2);
  const int index = editor_->addLayer(type, topLeft);
  scene_->selectNodes({index});
  setFocus();
  return index;
}

int DesignerView::addLayerAtCentre(LayerType type) {
  return dropLayer(type, mapToScene(viewport()->rect().center()));
}

bool DesignerView::focusNode(const QString& id) {
  NodeItem* item = scene_->nodeItem(id);
  if (!item) return false;
  scene_->selectNodes({item->index()});
  centerOn(item);
  return true;
}

void DesignerView::deleteSelection() {
  const std::vector<int> nodes = scene_->selectedNodes();
  std::vector<int> edges = scene_->selectedEdges();
  if (nodes.empty() && edges.empty()) {
    emit refused(tr("Nothing selected to delete"));
    return;
  }
  editor_->removeItems(nodes, edges);
}

void DesignerView::copySelection() {
  const std::vector<int> nodes = scene_->selectedNodes();
  if (nodes.empty()) {
    emit refused(tr("Select layers to copy"));
    return;
  }
  // The clipboard holds a project file with just these layers (and the
  // document's settings, so it parses like any project): readable in an
  // editor and pasted back through the project loader.
  Project clip = doc_->project();
  clip.model = fragment_of(doc_->project().model, nodes);
  clip.name = "clipboard";
  const std::string text = project_to_json(clip);
  auto* mime = new QMimeData;
  mime->setData(kFragmentMimeType, QByteArray::fromStdString(text));
  mime->setText(QString::fromStdString(text));
  QApplication::clipboard()->setMimeData(mime);
  pasteCount_ = 0;
}

void DesignerView::cutSelection() {
  if (scene_->selectedNodes().empty()) {
    emit refused(tr("Select layers to cut"));
    return;
  }
  copySelection();
  editor_->removeItems(scene_->selectedNodes(), {});
}

void DesignerView::paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  QByteArray text;
  if (mime && mime->hasFormat(kFragmentMimeType))
    text = mime->data(kFragmentMimeType);
  else if (mime && mime->hasText())
    text = mime->text().toUtf8();
  if (text.trimmed().isEmpty()) {
    emit refused(tr("The clipboard holds no layers to paste"));
    return;
  }
  Project clip;
  try {
    clip = parse_project(std::string_view(text.constData(), static_cast<size_t>(text.size())),
                         "clipboard");
  } catch (const ProjectError& e) {
    emit refused(tr("The clipboard does not hold layers: %1")
                     .arg(QString::fromStdString(e.diagnostics().front().str())));
    return;
  }
  if (clip.model.nodes.empty()) {
    emit refused(tr("The clipboard holds no layers to paste"));
    return;
  }
  ++pasteCount_;
  const std::vector<int> added = editor_->insertFragment(
      clip.model, QPointF(kPasteStep * pasteCount_, kPasteStep * pasteCount_));
  scene_->selectNodes(added);
}

void DesignerView::selectAllNodes() {
  scene_->selectNodes([this] {
    std::vector<int> all(static_cast<size_t>(scene_->nodeCount()));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }());
}

void DesignerView::scaleBy(double factor) {
  const double target = std::clamp(zoomFactor() * factor, kMinZoom, kMaxZoom);
  const double f = target / zoomFactor();
  scale(f, f);
}

void DesignerView::zoomIn() {
  scaleBy(1.25);
}

void DesignerView::zoomOut() {
  scaleBy(1 / 1.25);
}

void DesignerView::resetZoom() {
  setTransform(QTransform());
}

void DesignerView::zoomToFit() {
  const QRectF items = scene_->itemsBoundingRect();
  if (items.isEmpty()) {
    resetZoom();
    return;
  }
  fitInView(items.adjusted(-30, -30, 30, 30), Qt::KeepAspectRatio);
  // A small network is shown at its natural size rather than blown up.
  if (zoomFactor() > 1.0) resetZoom();
  if (zoomFactor() < kMinZoom) scaleBy(kMinZoom / zoomFactor());
  centerOn(items.center());
}

void DesignerView::showOverview() {
  zoomToFit();
  if (zoomFactor() >= kReadableZoom) return;
  scaleBy(kReadableZoom / zoomFactor());
  const QRectF items = scene_->itemsBoundingRect();
  const QRectF visible = mapToScene(viewport()->rect()).boundingRect();
  centerOn(items.center().x(), items.top() - 30 + visible.height() / 2);
}

void DesignerView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    const double steps = event->angleDelta().y() / 120.0;
    scaleBy(std::pow(1.15, steps));
    event->accept();
    return;
  }
  QGraphicsView::wheelEvent(event);
}

void DesignerView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::MiddleButton) {
    panning_ = true;
    panLast_ = event->position().toPoint();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::mousePressEvent(event);
}

void DesignerView::mouseMoveEvent(QMouseEvent* event) {
  if (panning_) {
    const QPoint now = event->position().toPoint();
    const QPoint delta = now - panLast_;
    panLast_ = now;
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    event->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(event);
}

void DesignerView::mouseReleaseEvent(QMouseEvent* event) {
  if (panning_ && event->button() == Qt::MiddleButton) {
    panning_ = false;
    viewport()->unsetCursor();
    event->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(event);
}

void DesignerView::dragEnterEvent(QDragEnterEvent* event) {
  if (layer_from_mime(event->mimeData())) {
    event->setDropAction(Qt::CopyAction);
    event->accept();
    return;
  }
  QGraphicsView::dragEnterEvent(event);
}

void DesignerView::dragMoveEvent(QDragMoveEvent* event) {
  if (layer_from_mime(event->mimeData())) {
    event->setDropAction(Qt::CopyAction);
    event->accept();
    return;
  }
  QGraphicsView::dragMoveEvent(event);
}

void DesignerView::dropEvent(QDropEvent* event) {
  if (const auto type = layer_from_mime(event->mimeData())) {
    dropLayer(*type, mapToScene(event->position().toPoint()));
    event->setDropAction(Qt::CopyAction);
    event->accept();
    return;
  }
  QGraphicsView::dropEvent(event);
}

}  // namespace tr::gui

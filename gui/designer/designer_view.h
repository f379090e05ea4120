// SPDX-License-Identifier: GPL-3.0-or-later
// DesignerView: the node editor's window onto the canvas. It zooms (Ctrl+wheel,
// actions) and pans (middle button), accepts layers dropped from the palette,
// and implements the edit actions on the selection: delete, copy, cut,
// paste, select all.
#pragma once

#include <QGraphicsView>
#include <QPoint>

#include <renaissance/layer_type.h>

namespace tr::gui {

class DesignerScene;
class ModelEditor;
class ProjectDocument;

class DesignerView : public QGraphicsView {
  Q_OBJECT

 public:
  // MIME type of a palette drag; the data is the layer type's name.
  static constexpr const char* kLayerMimeType = "application/x-renaissance-layer-type";
  // MIME type of copied layers; the data is a project file holding them.
  static constexpr const char* kFragmentMimeType = "application/x-renaissance-layers";

  DesignerView(ProjectDocument* doc, ModelEditor* editor, QWidget* parent = nullptr);

  DesignerScene* designerScene() const { return scene_; }
  double zoomFactor() const;

  // What a drop from the palette does: a new node at `scenePos`, selected.
  int dropLayer(LayerType type, QPointF scenePos);
  // A new node in the middle of the visible area (palette double-click).
  int addLayerAtCentre(LayerType type);
  // Selects the node and scrolls to it; false when there is no such node.
  bool focusNode(const QString& id);

 public slots:
  void deleteSelection();
  void copySelection();
  void cutSelection();
  void paste();
  void selectAllNodes();
  void zoomIn();
  void zoomOut();
  void resetZoom();
  void zoomToFit();
  // Fits the graph, but never below a zoom where labels stay readable; a tall
  // network then shows its top (where data enters).
  void showOverview();

 signals:
  void refused(const QString& why);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void scaleBy(double factor);
  void updateSceneRect();

  ProjectDocument* doc_;
  ModelEditor* editor_;
  DesignerScene* scene_;
  bool panning_ = false;
  QPoint panLast_;
  int pasteCount_ = 0;
};

}  // namespace tr::gui

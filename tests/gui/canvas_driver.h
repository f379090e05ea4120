// SPDX-License-Identifier: GPL-3.0-or-later
// CanvasDriver: drives the designer canvas as a user does, for the GUI
// tests: palette drops delivered as the drag-and-drop events a QDrag sends,
// mouse drags between ports, positions in scene coordinates.
#pragma once

#include <QApplication>
#include <QMimeData>
#include <QtTest>
#include <memory>

#include "designer/designer_scene.h"
#include "designer/designer_view.h"
#include "designer/node_item.h"
#include "designer/palette_widget.h"
#include "designer/port_item.h"
#include "project_document.h"

namespace tr::gui {

struct CanvasDriver {
  DesignerView* view;
  PaletteWidget* palette;
  ProjectDocument* doc;

  DesignerScene* scene() const { return view->designerScene(); }
  QWidget* vp() const { return view->viewport(); }
  QPoint at(QPointF scenePos) const { return view->mapFromScene(scenePos); }
  NodeItem* node(const char* id) const { return scene()->nodeItem(QString::fromLatin1(id)); }

  // A palette drag released over the canvas at `scenePos`; returns the new
  // node's index, -1 when the canvas refused it.
  int drop(LayerType t, QPointF scenePos) const {
    std::unique_ptr<QMimeData> mime(palette->dragPayload(t));
    const QPoint pos = at(scenePos);
    const Qt::DropActions actions = Qt::CopyAction | Qt::MoveAction;
    QDragEnterEvent enter(pos, actions, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(vp(), &enter);
    if (!enter.isAccepted()) return -1;
    QDragMoveEvent move(pos, actions, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(vp(), &move);
    QDropEvent dropped(QPointF(pos), actions, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(vp(), &dropped);
    // A copy, never a move: a move would take the entry out of the palette.
    if (!dropped.isAccepted() || dropped.dropAction() != Qt::CopyAction) return -1;
    return static_cast<int>(doc->project().model.nodes.size()) - 1;
  }

  void mouseDrag(QPoint from, QPoint to, int steps = 4) const {
    QTest::mousePress(vp(), Qt::LeftButton, Qt::NoModifier, from);
    for (int i = 1; i <= steps; ++i) QTest::mouseMove(vp(), from + (to - from) * i / steps);
    QTest::mouseRelease(vp(), Qt::LeftButton, Qt::NoModifier, to);
  }

  // Drags from `from`'s output port to input `port` of `to`, both by id.
  void connectByMouse(const char* from, const char* to, int port = 0) const {
    mouseDrag(at(node(from)->outputPort(0)->scenePos()), at(node(to)->inputPort(port)->scenePos()));
  }
};

}  // namespace tr::gui

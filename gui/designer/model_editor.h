// SPDX-License-Identifier: GPL-3.0-or-later
// ModelEditor: every edit the designer offers, as one call each. It checks
// the edit, turns it into an undo command on the document's stack, and says
// in `refused` why an edit was not made (a message for the status bar).
// The canvas, the palette's drop, the properties panel and the tests all
// edit through it.
#pragma once

#include <QObject>
#include <QPointF>
#include <QString>
#include <vector>

#include <renaissance/project.h>
#include "project_document.h"

namespace tr::gui {

class ModelEditor : public QObject {
  Q_OBJECT

 public:
  explicit ModelEditor(ProjectDocument* doc, QObject* parent = nullptr);

  ProjectDocument* document() const { return doc_; }

  // A new node of `type` with its top-left corner at `pos`; its index.
  int addLayer(LayerType type, QPointF pos);
  // Output port `fromPort` of `from` to input port `toPort` of `to`.
  bool connectPorts(int from, int fromPort, int to, int toPort);
  bool removeItems(const std::vector<int>& nodes, const std::vector<int>& edges);
  // Nodes dragged on the canvas; calls with the same serial form one undo step.
  void moveNodes(int dragSerial, const std::vector<NodePosition>& from,
                 const std::vector<NodePosition>& to);
  // Replaces node `index` (id or parameters) with `node`; `field` names what
  // changed. On refusal `why` (if given) says why, as refused() does.
  bool editNode(int index, const LayerNode& node, const QString& field, QString* why = nullptr);
  // Appends copied nodes shifted by `offset`; the new nodes' indices.
  std::vector<int> insertFragment(const ModelGraph& fragment, QPointF offset);
  // Lays the whole graph out again (one undo step).
  void arrange();
  bool setDevices(const DeviceSet& devices);

  // A fresh serial for the next drag.
  int nextDragSerial() { return ++dragSerial_; }

 signals:
  void refused(const QString& why);

 private:
  ProjectDocument* doc_;
  int dragSerial_ = 0;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// MoveNodesCommand: nodes moved on the canvas. A mouse drag pushes one per
// mouse move, all with the same drag serial, and mergeWith folds them into a
// single undo step; a new drag has a new serial and starts a new step.
#pragma once

#include <QUndoCommand>
#include <vector>

#include "project_document.h"

namespace tr::gui {

class MoveNodesCommand : public QUndoCommand {
 public:
  static constexpr int kId = 0x6d6f7665;  // "move"

  MoveNodesCommand(ProjectDocument* doc, int dragSerial, std::vector<NodePosition> from,
                   std::vector<NodePosition> to);
  void redo() override;
  void undo() override;
  int id() const override { return kId; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  ProjectDocument* doc_;
  int serial_;
  std::vector<NodePosition> from_, to_;
};

}  // namespace tr::gui

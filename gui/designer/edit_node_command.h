// SPDX-License-Identifier: GPL-3.0-or-later
// EditNodeCommand: a change to one node's id or parameters from the
// properties panel. Successive changes of the same field of the same node
// (typing "128" into a spin box) merge into one undo step.
#pragma once

#include <QString>
#include <QUndoCommand>

#include <renaissance/project.h>

namespace tr::gui {

class ProjectDocument;

class EditNodeCommand : public QUndoCommand {
 public:
  static constexpr int kId = 0x65646974;  // "edit"

  EditNodeCommand(ProjectDocument* doc, int index, LayerNode before, LayerNode after,
                  QString field);
  void redo() override;
  void undo() override;
  int id() const override { return kId; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  ProjectDocument* doc_;
  int index_;
  LayerNode before_, after_;
  QString field_;
  // Undone once: the next edit of the field is a step of its own, not
  // folded into this one (Ctrl+Z, then a new value, then Ctrl+Z again
  // returns to the value before the new one).
  bool undone_ = false;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// SetTrainingCommand: one undoable change to the project's name, description,
// dataset or training settings from the training settings panel. Successive
// changes of the same field (arrow clicks in a spin box) merge into one step.
#pragma once

#include <QString>
#include <QUndoCommand>

#include "project_document.h"

namespace tr::gui {

class SetTrainingCommand : public QUndoCommand {
 public:
  static constexpr int kId = 0x73657474;  // "sett"

  // `field` is the key in the project file ("training.optimizer.lr"): only
  // edits of the same field merge. `label` names it for the Edit menu.
  SetTrainingCommand(ProjectDocument* doc, ProjectSettings before, ProjectSettings after,
                     QString field, const QString& label);
  void redo() override;
  void undo() override;
  int id() const override { return kId; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  ProjectDocument* doc_;
  ProjectSettings before_, after_;
  QString field_;
  // Undone once: the next edit of the field is a step of its own, not
  // folded into this one (Ctrl+Z, then a new value, then Ctrl+Z again
  // returns to the value before the new one).
  bool undone_ = false;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// GraphCommand: an undoable structural edit (add, delete, connect,
// disconnect, paste). It keeps the model graph before and after: graphs are
// small, and swapping whole graphs keeps node indices in edges exact.
#pragma once

#include <QUndoCommand>

#include <renaissance/project.h>

namespace tr::gui {

class ProjectDocument;

class GraphCommand : public QUndoCommand {
 public:
  GraphCommand(ProjectDocument* doc, const QString& text, ModelGraph before, ModelGraph after);
  void redo() override;
  void undo() override;

 private:
  ProjectDocument* doc_;
  ModelGraph before_, after_;
};

}  // namespace tr::gui

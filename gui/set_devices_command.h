// SPDX-License-Identifier: GPL-3.0-or-later
// SetDevicesCommand: the undoable choice of devices the project trains on
// (cpu:N ranks or CUDA devices); it changes the batch each device sees.
#pragma once

#include <QUndoCommand>

#include <renaissance/project.h>

namespace tr::gui {

class ProjectDocument;

class SetDevicesCommand : public QUndoCommand {
 public:
  SetDevicesCommand(ProjectDocument* doc, DeviceSet before, DeviceSet after);
  void redo() override;
  void undo() override;

 private:
  ProjectDocument* doc_;
  DeviceSet before_, after_;
};

}  // namespace tr::gui

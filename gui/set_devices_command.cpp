// SPDX-License-Identifier: GPL-3.0-or-later
#include "set_devices_command.h"

#include <QCoreApplication>

#include "project_document.h"

namespace tr::gui {

SetDevicesCommand::SetDevicesCommand(ProjectDocument* doc, DeviceSet before, DeviceSet after)
    : doc_(doc), before_(std::move(before)), after_(std::move(after)) {
  setText(QCoreApplication::translate("SetDevicesCommand", "Use devices %1")
              .arg(QString::fromStdString(after_.str())));
}

void SetDevicesCommand::redo() {
  doc_->setDevices(after_);
}

void SetDevicesCommand::undo() {
  doc_->setDevices(before_);
}

}  // namespace tr::gui

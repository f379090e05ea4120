// SPDX-License-Identifier: GPL-3.0-or-later
// File > Export ONNX: the design with a checkpoint's weights as an ONNX
// file (include/renaissance/onnx_export.h), without dialogs, for the window
// and its tests.
#pragma once

#include <QString>

#include <renaissance/project.h>

namespace tr::gui {

// Writes `project`'s model with the weights of the checkpoint at
// `checkpoint` to `out`. True with `message` the status line to show; false
// with `message` saying what was wrong (nothing written).
bool export_onnx_file(const Project& project, const QString& checkpoint, const QString& out,
                      QString* message);

}  // namespace tr::gui

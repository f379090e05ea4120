// SPDX-License-Identifier: GPL-3.0-or-later
// File > Import ONNX: an ONNX model as a project file and a checkpoint of
// its weights beside it (include/renaissance/onnx_import.h), without
// dialogs, for the window and its tests.
#pragma once

#include <QString>
#include <QStringList>

namespace tr::gui {

struct ImportedModel {
  QString project;     // the project file written
  QString checkpoint;  // its weights: the project file's name with .ckpt
  QString summary;     // one line: what was imported
  QStringList notes;   // what the user should know (dataset, normalisation)
};

// Imports `onnx` into the project file `project` (named after it). True with
// `out` filled; false with `message` saying what was wrong (nothing written).
bool import_onnx_file(const QString& onnx, const QString& project, ImportedModel* out,
                      QString* message);

}  // namespace tr::gui

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

// The project file an import proposes: beside the model and named after it
// ("lenet.onnx" -> "lenet.json"), "lenet-imported.json" (then "-2", "-3"...)
// where that is taken (often by the project the model was exported from),
// never an existing file, nor one whose checkpoint exists.
QString import_project_path(const QString& onnx);

// Imports `onnx` into the project file `project` (named after it). True with
// `out` filled; false with `message` saying what was wrong (nothing written).
bool import_onnx_file(const QString& onnx, const QString& project, ImportedModel* out,
                      QString* message);

}  // namespace tr::gui

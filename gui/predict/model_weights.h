// SPDX-License-Identifier: GPL-3.0-or-later
// Which weights Run > Try the Model starts with: the final weights of the
// newest run of the project that kept some (every recorded run keeps the
// weights it ends with), else the project's starting weights (an imported
// model's); and where none are, why, so the dialog can say what to do.
#pragma once

#include <QString>

#include <renaissance/project.h>

namespace tr::gui {

struct ModelWeights {
  QString path;    // a checkpoint file; empty: none found
  QString origin;  // where they come from, in words; with no path, why there are none
};

// `store_path`: the run store (empty: none to look in).
ModelWeights find_model_weights(const Project& project, const QString& store_path);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/class_names.h"

#include <renaissance/predict.h>

namespace tr::gui {

QStringList class_names(const DatasetSpec& dataset) {
  QStringList out;
  for (const std::string& n : class_names_of(dataset)) out << QString::fromStdString(n);
  return out;
}

}  // namespace tr::gui

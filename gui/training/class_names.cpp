// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/class_names.h"

#include <renaissance/dataset_kinds.h>
#include <renaissance/dataset_probe.h>

namespace tr::gui {

QStringList class_names(const DatasetSpec& dataset) {
  std::vector<std::string> names = dataset_class_names(dataset);
  if (dataset.kind == DatasetKind::ImageFolder) {
    const DatasetProbe probe = probe_dataset(dataset);
    if (probe.ok && static_cast<int64_t>(probe.class_names.size()) == dataset.classes)
      names = probe.class_names;
  }
  QStringList out;
  for (const std::string& n : names) out << QString::fromStdString(n);
  return out;
}

}  // namespace tr::gui

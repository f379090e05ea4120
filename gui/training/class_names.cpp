// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/class_names.h"

#include <QCoreApplication>

#include <renaissance/dataset_probe.h>

namespace tr::gui {

QStringList class_names(const DatasetSpec& dataset) {
  if (dataset.kind == DatasetKind::FashionMnist && dataset.classes == 10)
    return {QStringLiteral("T-shirt/top"), QStringLiteral("Trouser"), QStringLiteral("Pullover"),
            QStringLiteral("Dress"),       QStringLiteral("Coat"),    QStringLiteral("Sandal"),
            QStringLiteral("Shirt"),       QStringLiteral("Sneaker"), QStringLiteral("Bag"),
            QStringLiteral("Ankle boot")};
  if (dataset.kind == DatasetKind::Cifar10 && dataset.classes == 10)
    return {QStringLiteral("airplane"), QStringLiteral("automobile"), QStringLiteral("bird"),
            QStringLiteral("cat"),      QStringLiteral("deer"),       QStringLiteral("dog"),
            QStringLiteral("frog"),     QStringLiteral("horse"),      QStringLiteral("ship"),
            QStringLiteral("truck")};
  if (dataset.kind == DatasetKind::ImageFolder) {
    const DatasetProbe probe = probe_dataset(dataset);
    if (probe.ok && static_cast<int64_t>(probe.class_names.size()) == dataset.classes) {
      QStringList folders;
      for (const std::string& n : probe.class_names) folders << QString::fromStdString(n);
      return folders;
    }
  }
  QStringList names;
  for (int64_t c = 0; c < dataset.classes; ++c)
    names << QCoreApplication::translate("tr::gui::TrainingView", "class %1").arg(c);
  return names;
}

}  // namespace tr::gui

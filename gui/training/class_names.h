// SPDX-License-Identifier: GPL-3.0-or-later
// class_names: what the confusion matrix calls each class. The engine
// knows labels only as numbers; Fashion-MNIST's names are well known.
#pragma once

#include <QStringList>

#include <renaissance/project.h>

namespace tr::gui {

// One name per class of the dataset: Fashion-MNIST's ten, else "class N".
QStringList class_names(const DatasetSpec& dataset);

}  // namespace tr::gui

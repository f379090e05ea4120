// SPDX-License-Identifier: GPL-3.0-or-later
// class_names: what the confusion matrix calls each class: the dataset's
// own names (dataset_kinds.h), an image folder's class folders.
#pragma once

#include <QStringList>

#include <renaissance/project.h>

namespace tr::gui {

// One name per class of the dataset: Fashion-MNIST's and CIFAR-10's, an
// image folder's folder names, else "class N".
QStringList class_names(const DatasetSpec& dataset);

}  // namespace tr::gui

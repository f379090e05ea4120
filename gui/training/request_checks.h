// SPDX-License-Identifier: GPL-3.0-or-later
// check_request: what can be known about a training request at once, on the
// GUI thread, without reading the dataset or compiling: a checkpoint file
// that is not there, a checkpoint folder that cannot be written, options the
// project cannot honour. Everything else is found by the training thread.
#pragma once

#include <QString>

#include <renaissance/project.h>
#include "training/training_request.h"

namespace tr::gui {

// Empty when the request may start; else what is wrong and what to do.
// Creates the checkpoint folder when it is missing (training would anyway).
QString check_request(const Project& project, const TrainingRequest& request);

}  // namespace tr::gui

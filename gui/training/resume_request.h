// SPDX-License-Identifier: GPL-3.0-or-later
// What the Runs view's Resume asks of the Training view: the recorded run's
// own project and a request that continues it from its latest checkpoint.
#pragma once

#include <QString>

#include <renaissance/project.h>
#include "training/training_request.h"

namespace tr::gui {

// Reads run `id` from the run store at `store_path` (not its checkpoint
// files: the training thread reads and checks those); false with `error`
// saying why it cannot be resumed (running, finished, no checkpoint
// recorded, a recorded project this build cannot read).
bool resume_request(const QString& store_path, qint64 id, Project* project,
                    TrainingRequest* request, QString* error);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// failure_text: the message the Training view shows when a run cannot start
// or fails: the engine's own text (which names the file, node or setting)
// plus what the user can do about it at that stage.
#pragma once

#include <QString>
#include <exception>

namespace tr::gui {

enum class TrainingStage {
  Setup,       // compiling the project, loading the dataset, creating the backend
  Checkpoint,  // reading the checkpoint to resume from
  Store,       // opening the run store and recording the run
  Training,    // the trainer itself
};

QString failure_text(TrainingStage stage, const std::exception& error);

}  // namespace tr::gui

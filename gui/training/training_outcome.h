// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingOutcome: how a recorded run ended, as the training thread reports
// it to the GUI.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>

namespace tr::gui {

struct TrainingOutcome {
  int64_t run_id = 0;  // in the run store
  int64_t steps = 0;   // global step count reached
  int64_t first_step = 0;
  bool stopped = false;  // by a stop request (a run that reached its max_steps finished)
  bool failed = false;
  QString error;            // why it failed
  QStringList checkpoints;  // files written, in order
  // The weights the run ended with (in its own folder beside the run store);
  // empty when none were kept, with the reason in final_weights_error when
  // writing failed.
  QString final_weights, final_weights_error;
  // Started from these weights (Start from weights), with this many tensors taken.
  QString init_from;
  int64_t init_loaded = 0;
  QString record_warning;  // what the run store could not take; empty when all went in
};

}  // namespace tr::gui

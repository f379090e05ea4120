// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingRequest: what the user asks of one training run on top of the
// project's own settings (the Training view's controls, or a test).
#pragma once

#include <QString>
#include <cstdint>

namespace tr::gui {

struct TrainingRequest {
  int64_t epochs = 0;      // 0: the project's
  int64_t max_steps = -1;  // -1: no limit (a global step count, so a resumed run counts on)
  bool validate = true;
  QString checkpoint_dir;  // empty: no checkpoints
  QString resume_path;     // empty: start from fresh weights
  // > 0: continue this recorded run from its latest checkpoint, as the same
  // run, with the options it was started with (the project is its recorded
  // one; resume_path and checkpoint_dir stay empty).
  int64_t resume_run = 0;
  bool eval_ema = false;  // needs training.ema in the project
  // Profiled global steps [begin, end) for the timeline; the first step is
  // left out because it warms caches. begin < 0: no profile.
  int64_t profile_begin = 1;
  int64_t profile_end = 3;
};

}  // namespace tr::gui

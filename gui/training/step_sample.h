// SPDX-License-Identifier: GPL-3.0-or-later
// StepSample: one training step as the training thread hands it to the GUI
// (the engine's StepReport plus the figures the view derives from it).
#pragma once

#include <cstdint>

namespace tr::gui {

struct StepSample {
  int64_t step = 0;  // global step number, from 0
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t batches = 0;  // per epoch
  double loss = 0, top1 = 0, lr = 0;
  double seconds = 0;       // this step's wall time
  double images_per_s = 0;  // as the run store counts it (a partial batch has fewer images)
  double elapsed = 0;       // wall seconds since training began, pauses left out
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// ProgressEstimate: how far a run is (steps done of all its steps) and when
// it should end, from the steps it has reported. A resumed run counts from
// its checkpoint's step; the time per step is this run's own, validation
// included, pauses left out.
#pragma once

#include <QString>
#include <cstdint>

#include "training/step_sample.h"

namespace tr::gui {

class ProgressEstimate {
 public:
  // `epochs` the run trains in all; `max_steps` < 0: no step limit.
  void reset(int64_t epochs, int64_t max_steps);
  void add(const StepSample& sample);

  int64_t done() const { return done_; }  // global steps done
  // Steps of the whole run (the epochs' batches, cut by max_steps); -1
  // until the first step says how many batches an epoch has.
  int64_t total() const;
  // Seconds until the last step; -1 while unknown, and once the run ended.
  double etaSeconds() const;
  // The run ended (finished, stopped or failed): no time is left to estimate.
  void end() { ended_ = true; }
  // "step 120 of 1407 (8.5%), ETA 0:01:23"
  QString text() const;

  // "h:mm:ss"
  static QString clock(double seconds);

 private:
  int64_t epochs_ = 0, maxSteps_ = -1;
  int64_t batches_ = 0;
  int64_t first_ = -1;  // the first step this run reported
  int64_t done_ = 0;
  double elapsed_ = 0;
  bool ended_ = false;
};

}  // namespace tr::gui

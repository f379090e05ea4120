// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingWorker: one training run on its own thread, as the CLI runs it:
// the project set up for its devices, the checkpoint to resume from, the
// run recorded in the run store, then the engine's trainer. It talks to the
// GUI only through signals (connect them queued): steps in batches, epochs,
// the profiled steps and how the run ended. The GUI steers it through the
// RunControl it shares.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <string>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/profile.h>
#include <renaissance/project.h>
#include <renaissance/training.h>
#include "training/run_control.h"
#include "training/step_sample.h"
#include "training/training_outcome.h"
#include "training/training_request.h"

namespace tr::gui {

class TrainingWorker : public QObject {
  Q_OBJECT

 public:
  TrainingWorker(Project project, TrainingRequest request, std::string store_path,
                 std::shared_ptr<RunControl> control);

  // Runs the whole training; returns after ended() was emitted.
  void run();

 signals:
  // The run is in the store and training begins.
  void started(qint64 runId, const QString& description);
  // The steps done since the last delivery, in order (see StepThrottle).
  void stepsDone(const std::vector<tr::gui::StepSample>& steps);
  void epochDone(const tr::EpochReport& epoch);
  // The run waits at the pause gate after this step.
  void pausedAt(qint64 step);
  // The run store refuses writes (its rows wait in memory), or takes them
  // again (`recovered`); said once each.
  void storeTrouble(const QString& text, bool recovered);
  void profileReady(const std::vector<tr::ProfileSpan>& spans,
                    std::shared_ptr<const tr::CompiledPlan> compiled);
  // Always the last signal, also when the run could not start.
  void ended(const tr::gui::TrainingOutcome& outcome);

 private:
  TrainingOutcome runTraining();

  Project project_;
  TrainingRequest request_;
  std::string storePath_;
  std::shared_ptr<RunControl> control_;
};

}  // namespace tr::gui

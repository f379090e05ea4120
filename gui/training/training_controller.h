// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingController: starts training runs on a thread of their own and
// steers them from the GUI thread (pause, resume, stop) without ever
// waiting for them, except when it is destroyed: then it stops the run and
// joins its thread, so the run store records the run as stopped.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/profile.h>
#include <renaissance/project.h>
#include <renaissance/training.h>
#include "training/step_sample.h"
#include "training/training_outcome.h"
#include "training/training_request.h"

class QThread;

namespace tr::gui {

class RunControl;
class TrainingWorker;

class TrainingController : public QObject {
  Q_OBJECT

 public:
  enum class State {
    Idle,
    Preparing,  // compiling, loading the dataset, opening the store
    Running,
    Paused,    // asked to pause; the run waits after its current step
    Stopping,  // asked to stop; the run ends before its next step
  };
  Q_ENUM(State)

  explicit TrainingController(QObject* parent = nullptr);
  ~TrainingController() override;

  // False with `error` set, and nothing started, when a run is in progress
  // or the request cannot work (see check_request) or there is no run store
  // path. Problems found later (the project, the dataset, the checkpoint's
  // content, the store file) end the run with runEnded(outcome.failed).
  bool start(const Project& project, const TrainingRequest& request, QString* error);
  void pause();
  void resume();
  void stop();

  State state() const { return state_; }
  bool isRunning() const { return state_ != State::Idle; }
  // What pause()/resume() and stop() would act on now: every control that
  // offers them (the view's buttons, the window's actions) asks these.
  bool canPauseOrResume() const {
    return state_ == State::Preparing || state_ == State::Running || state_ == State::Paused;
  }
  bool canStop() const { return isRunning() && state_ != State::Stopping; }
  // The recorded run in progress, or the last one; 0 before any.
  qint64 runId() const { return runId_; }

 signals:
  void stateChanged(tr::gui::TrainingController::State state);
  void runningChanged(bool running);
  void runStarted(qint64 runId, const QString& description);
  void stepsDone(const std::vector<tr::gui::StepSample>& steps);
  void epochDone(const tr::EpochReport& epoch);
  void pausedAt(qint64 step);
  void storeTrouble(const QString& text, bool recovered);
  void profileReady(const std::vector<tr::ProfileSpan>& spans,
                    std::shared_ptr<const tr::CompiledPlan> compiled);
  // The run is over and its thread joined: start() may be called again.
  void runEnded(const tr::gui::TrainingOutcome& outcome);

 private:
  void setState(State state);
  void threadFinished();
  void joinThread();

  State state_ = State::Idle;
  bool started_ = false;  // the worker reported the run started
  qint64 runId_ = 0;
  std::shared_ptr<RunControl> control_;
  QThread* thread_ = nullptr;
  TrainingWorker* worker_ = nullptr;
  TrainingOutcome outcome_;
};

}  // namespace tr::gui

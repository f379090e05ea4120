// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/training_controller.h"

#include <QThread>

#include <renaissance/store_location.h>
#include "training/request_checks.h"
#include "training/run_control.h"
#include "training/training_worker.h"

namespace tr::gui {

TrainingController::TrainingController(QObject* parent) : QObject(parent) {}

TrainingController::~TrainingController() {
  if (!thread_) return;
  control_->requestStop();
  joinThread();
}

bool TrainingController::start(const Project& project, const TrainingRequest& request,
                               QString* error) {
  const auto refuse = [error](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (isRunning()) return refuse(tr("A training run is in progress; stop it first."));
  if (QString why = check_request(project, request); !why.isEmpty()) return refuse(why);
  std::string store_path;
  try {
    store_path = store::resolve_store_path();
  } catch (const std::exception& e) {
    return refuse(
        tr("There is no place for the run store: %1\nSet %2 to the path of a store "
           "file.")
            .arg(QString::fromStdString(e.what()), QString::fromLatin1(store::kStoreEnvVar)));
  }

  control_ = std::make_shared<RunControl>();
  outcome_ = {};
  started_ = false;
  thread_ = new QThread;
  thread_->setObjectName(QStringLiteral("training"));
  worker_ = new TrainingWorker(project, request, std::move(store_path), control_);
  worker_->moveToThread(thread_);
  // Queued: the worker's signals come from its own thread or a rank thread.
  const auto q = Qt::QueuedConnection;
  connect(
      worker_, &TrainingWorker::started, this,
      [this](qint64 id, const QString& text) {
        runId_ = id;
        started_ = true;
        if (state_ == State::Preparing) setState(State::Running);
        emit runStarted(id, text);
      },
      q);
  connect(worker_, &TrainingWorker::stepsDone, this, &TrainingController::stepsDone, q);
  connect(worker_, &TrainingWorker::epochDone, this, &TrainingController::epochDone, q);
  connect(worker_, &TrainingWorker::pausedAt, this, &TrainingController::pausedAt, q);
  connect(worker_, &TrainingWorker::storeTrouble, this, &TrainingController::storeTrouble, q);
  connect(worker_, &TrainingWorker::profileReady, this, &TrainingController::profileReady, q);
  connect(
      worker_, &TrainingWorker::ended, this,
      [this](const TrainingOutcome& outcome) { outcome_ = outcome; }, q);
  // The thread's event loop ends once the run has; thread-safe, so direct.
  connect(worker_, &TrainingWorker::ended, thread_, &QThread::quit, Qt::DirectConnection);
  connect(thread_, &QThread::finished, this, &TrainingController::threadFinished, q);
  thread_->start();
  QMetaObject::invokeMethod(worker_, &TrainingWorker::run, q);
  setState(State::Preparing);
  emit runningChanged(true);
  return true;
}

void TrainingController::pause() {
  if (state_ != State::Preparing && state_ != State::Running) return;
  control_->pause();
  setState(State::Paused);
}

void TrainingController::resume() {
  if (state_ != State::Paused) return;
  control_->resume();
  setState(started_ ? State::Running : State::Preparing);
}

void TrainingController::stop() {
  if (!canStop()) return;
  control_->requestStop();
  setState(State::Stopping);
}

void TrainingController::setState(State state) {
  if (state_ == state) return;
  state_ = state;
  emit stateChanged(state);
}

void TrainingController::threadFinished() {
  if (!thread_) return;
  joinThread();
  if (outcome_.run_id) runId_ = outcome_.run_id;
  setState(State::Idle);
  emit runningChanged(false);
  emit runEnded(outcome_);
}

void TrainingController::joinThread() {
  // The run itself ends the event loop; quitting here too covers a thread
  // whose run has not begun, which then never does.
  thread_->quit();
  thread_->wait();
  delete worker_;
  delete thread_;
  worker_ = nullptr;
  thread_ = nullptr;
}

}  // namespace tr::gui

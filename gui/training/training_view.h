// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingView: trains the project on a background thread and shows it
// live: loss, learning rate and images/s per step, top-1 per epoch, a
// progress bar with ETA, pause/resume/stop, checkpoints and resuming, and
// after each validation the confusion matrix with per-class accuracy.
// Every run is recorded in the run store, as the CLI records its runs.
#pragma once

#include <QWidget>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/profile.h>
#include <renaissance/project.h>
#include "training/progress_estimate.h"
#include "training/training_controller.h"
#include "training/training_request.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace tr::gui {

class ConfusionMatrixView;
class RunFollower;
class CurvePlot;
class TrainingCharts;

class TrainingView : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingView(QWidget* parent = nullptr);
  // Stops a run in progress and waits for it (it is recorded as stopped).
  ~TrainingView() override;

  // The project the Train button trains (the main window's document).
  void setProject(const Project& project);
  // Why the project cannot train now (the window's problems that block
  // it): the Train button is disabled with this as its tooltip. Empty: none.
  void setTrainBlocked(const QString& why);
  // Another project was opened: the previous run's curves, matrix and
  // progress go (unless a run is still going: it stays, named by its caption).
  void clearRun();
  // What the view shows: "Run 12 of lenet-fashion", "No run of x yet...".
  QString captionText() const;
  // Asked when the Train button is clicked, before anything starts; false
  // with `why` set refuses (the window brings its checks up to date here).
  void setStartCheck(std::function<bool(QString* why)> check) { startCheck_ = std::move(check); }
  // The request the controls describe.
  TrainingRequest requestFromControls() const;

  // Without dialogs: false with `error` saying what is wrong and nothing
  // started. Later failures (the project does not compile, the dataset or
  // the store cannot be opened, the checkpoint does not fit) end the run
  // with runFailed(message) and errorText().
  bool start(const Project& project, const TrainingRequest& request, QString* error);
  // Shows a run another process records in the store at `storePath` (the
  // CLI's, or srun's several processes) as it goes, from its first step,
  // until it ends, Train starts a run here, or stopFollowing(). False with
  // `error` when it cannot be read, is not being recorded, or this window
  // trains a run of its own now (its own run: true, it is shown already).
  bool follow(const QString& storePath, qint64 run, QString* error);
  void stopFollowing();
  // The run followed; 0 when none.
  qint64 followedRun() const;
  void pause();
  void resume();
  void stop();

  bool isRunning() const { return controller_->isRunning(); }
  bool canPauseOrResume() const { return controller_->canPauseOrResume(); }
  bool canStop() const { return controller_->canStop(); }
  TrainingController::State state() const { return controller_->state(); }
  // The run in progress, or the last recorded one; 0 before any.
  qint64 lastRunId() const { return controller_->runId(); }
  // Global steps done as the view has received them.
  qint64 stepsDone() const { return progress_.done(); }
  QString statusText() const;
  QString errorText() const;
  // The banner about the run store's trouble during the run; empty when none.
  QString storeBannerText() const;

  TrainingCharts* charts() const { return charts_; }
  CurvePlot* lossPlot() const;
  ConfusionMatrixView* confusionMatrix() const { return confusion_; }
  QProgressBar* progressBar() const { return progressBar_; }
  QPushButton* trainButton() const { return train_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* stopButton() const { return stop_; }
  QPushButton* stopFollowingButton() const { return unfollow_; }

 signals:
  void runStarted(qint64 runId);
  // A recorded run ended: finished, stopped or failed.
  void runEnded(qint64 runId);
  void runFailed(const QString& message);
  // The run waits after this (global, 0-based) step until resume() or stop().
  void pausedAt(qint64 step);
  void profileReady(const std::vector<tr::ProfileSpan>& spans,
                    std::shared_ptr<const tr::CompiledPlan> compiled);
  void status(const QString& text);
  void runningChanged(bool running);
  // Every change of the run's state (preparing, running, paused, stopping,
  // idle): what enables the window's Pause and Stop.
  void stateChanged(tr::gui::TrainingController::State state);

 private:
  void buildControls();
  void trainClicked();
  void chooseCheckpointFolder();
  void chooseResumeFile();
  void updateControls();
  void setStatus(const QString& text);
  void setError(const QString& text);
  void onStarted(qint64 runId, const QString& description);
  void onSteps(const std::vector<StepSample>& steps);
  void onEpoch(const EpochReport& epoch);
  void onEnded(const TrainingOutcome& outcome);
  // A run here or one followed is going.
  bool live() const;
  // Clears the curves, matrix and messages for a run starting to show.
  void showNewRun(int64_t epochs, int64_t maxSteps);
  void showProgress();
  void setProgressText(const QString& text);

  TrainingController* controller_;
  RunFollower* follower_;
  std::optional<Project> project_;  // what Train trains
  DatasetSpec runDataset_;          // of the run shown
  ProgressEstimate progress_;

  QPushButton* train_;
  QPushButton* pause_;
  QPushButton* stop_;
  QPushButton* unfollow_;
  QSpinBox* epochs_;
  QSpinBox* maxSteps_;
  QCheckBox* validate_;
  QCheckBox* evalEma_;
  QLineEdit* checkpointDir_;
  QPushButton* chooseCheckpointDir_;
  QLineEdit* resumePath_;
  QPushButton* chooseResume_;
  QProgressBar* progressBar_;
  QLabel* status_;
  QLabel* error_;
  QLabel* storeBanner_;  // what the run store refused or took again during the run
  TrainingCharts* charts_;
  QLabel* validationCaption_;
  ConfusionMatrixView* confusion_;
  QString trainBlocked_;
  QLabel* caption_ = nullptr;
  QTabWidget* pages_ = nullptr;  // the curves, the validation
  QString runProject_;           // the name of the project the shown run trains
  std::function<bool(QString*)> startCheck_;
};

}  // namespace tr::gui

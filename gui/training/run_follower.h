// SPDX-License-Identifier: GPL-3.0-or-later
// RunFollower: follows a run that another process records (renaissance-cli
// train typed by hand, or started by srun or torchrun on several processes)
// by reading the run store once a second: its new steps and epochs, as the
// training view's own runs report them, and its end once the store says it
// ended (or that its writer died).
#pragma once

#include <QObject>
#include <QString>
#include <cstdint>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/training.h>
#include "training/step_sample.h"
#include "training/training_outcome.h"

class QTimer;

namespace tr::gui {

class RunFollower : public QObject {
  Q_OBJECT

 public:
  // What the view shows of the run followed.
  struct Run {
    qint64 id = 0;
    QString name;    // the project's
    QString writer;  // "pid 4711 on node-a"
    DatasetSpec dataset;
    int64_t epochs = 0;
    int64_t max_steps = -1;  // -1: no limit
  };

  explicit RunFollower(QObject* parent = nullptr);

  // Starts following `run` in the store at `storePath` from its first step
  // (read when the event loop next runs, then every kPollMs); false with
  // `error` when the store or the run cannot be read, or the run is not
  // being recorded now.
  bool follow(const QString& storePath, qint64 run, QString* error);
  // Stops following; the run goes on.
  void stop();
  bool active() const;
  const Run& run() const { return run_; }

  // How often the store is read.
  static constexpr int kPollMs = 1000;

 signals:
  void stepsRead(const std::vector<tr::gui::StepSample>& steps);
  void epochRead(const tr::EpochReport& epoch);
  // The run ended (finished, stopped, failed, or its writer died).
  void runEnded(const tr::gui::TrainingOutcome& outcome);
  // The store could not be read this time (it is tried again).
  void readTrouble(const QString& text);

 private:
  void poll();

  QTimer* timer_;
  QString path_;
  Run run_;
  int64_t batches_ = 0;     // per epoch; 0 while unknown
  double batchImages_ = 0;  // the global batch
  int64_t nextStep_ = 0;    // the first step not read yet
  int64_t nextEpoch_ = 0;   // the first epoch not read yet
  int64_t firstStep_ = -1;  // the first step read
  double elapsed_ = 0;      // training seconds of the steps read
};

}  // namespace tr::gui

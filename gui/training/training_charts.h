// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingCharts: the live charts of a run: loss, learning rate and images/s
// per step (loss and images/s with a smoothing control), and train/val
// top-1 per epoch. Steps are drawn in batches, never more often than the
// plots can be redrawn without starving the event loop.
#pragma once

#include <QElapsedTimer>
#include <QWidget>
#include <vector>

#include <renaissance/training.h>
#include "training/step_sample.h"

class QLabel;
class QSlider;
class QTimer;

namespace tr::gui {

class CurvePlot;

class TrainingCharts : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingCharts(QWidget* parent = nullptr);

  // Empties every chart for a new run.
  void clear();
  void addSteps(const std::vector<StepSample>& steps);
  void addEpoch(const EpochReport& epoch);
  // Draws what has arrived now instead of at the next batch (a run's end).
  void flush();

  // 0..0.99; the slider follows.
  void setSmoothing(double weight);
  double smoothing() const;

  CurvePlot* lossPlot() const { return loss_; }
  CurvePlot* top1Plot() const { return top1_; }
  CurvePlot* lrPlot() const { return lr_; }
  CurvePlot* throughputPlot() const { return throughput_; }
  QSlider* smoothingSlider() const { return slider_; }

 private:
  void addSeries();
  void scheduleFlush();

  CurvePlot* loss_;
  CurvePlot* top1_;
  CurvePlot* lr_;
  CurvePlot* throughput_;
  QSlider* slider_;
  QLabel* sliderValue_;
  QTimer* flushTimer_;
  QElapsedTimer sinceFlush_;
  std::vector<StepSample> pending_;
};

}  // namespace tr::gui

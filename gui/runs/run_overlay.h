// SPDX-License-Identifier: GPL-3.0-or-later
// RunOverlay: the curves of several runs in one plot, one series per run,
// with a metric chooser (step and epoch metrics), an x axis chooser (step,
// epoch, wall time; whole-number ticks for steps and epochs) and smoothing;
// the legend sits under the plot. Every record is handed to the plot; the
// plot reduces only what it draws, per pixel column.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>
#include <string>
#include <vector>

#include "runs/run_curves.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;

namespace tr::gui {

class CurvePlot;

class RunOverlay : public QWidget {
  Q_OBJECT

 public:
  struct Run {
    QString label;
    std::shared_ptr<const RunCurves> curves;
  };

  explicit RunOverlay(QWidget* parent = nullptr);

  // Redraws with these runs (in this order), keeping metric and axis.
  void setRuns(std::vector<Run> runs);
  const std::vector<Run>& runs() const { return runs_; }

  std::string metric() const;
  void setMetric(const std::string& key);  // one of curve_metrics()
  CurveAxis axis() const;
  void setAxis(CurveAxis axis);

  // For tests and screenshots.
  CurvePlot* plot() const { return plot_; }
  QComboBox* metricSelector() const { return metric_; }
  QComboBox* axisSelector() const { return axis_; }

 signals:
  void metricChanged(const QString& key);

 private:
  void redraw();

  std::vector<Run> runs_;
  QComboBox* metric_;
  QComboBox* axis_;
  QDoubleSpinBox* smoothing_;
  QLabel* hint_;
  CurvePlot* plot_;
};

}  // namespace tr::gui

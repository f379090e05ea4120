// SPDX-License-Identifier: GPL-3.0-or-later
// RecomputeCurveView: the plan's bytes per device against the compute it
// adds, as more of its saved features are recomputed in the backward in the
// order a memory budget takes them (the cheapest FLOPs per byte first). The
// compiles run on a worker thread; the current plan and its budget are
// marked, and clicking a point asks for a budget of its bytes.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/recompute_curve.h>

class QLabel;
class QThread;

namespace tr::gui {

class CurvePlot;

class RecomputeCurveView : public QWidget {
  Q_OBJECT

 public:
  explicit RecomputeCurveView(QWidget* parent = nullptr);
  ~RecomputeCurveView() override;

  // Computes the curve for the plan's design (null clears).
  void setPlan(std::shared_ptr<const CompiledPlan> cp);
  // The curve as computed for the last plan; empty while it computes.
  const std::vector<RecomputePoint>& points() const { return points_; }
  bool computing() const { return worker_ != nullptr; }
  CurvePlot* plot() const { return plot_; }
  QString captionText() const;
  // The point nearest a position in the plot's pixels, within 12 px; -1 when none.
  int pointAt(QPoint pos) const;

 signals:
  // A point was clicked: the budget, in whole MiB, that its plan fits.
  void budgetPicked(qint64 mib);

 private:
  struct Result;
  void start();
  void finished();
  void draw();

  CurvePlot* plot_;
  QLabel* caption_;
  std::shared_ptr<const CompiledPlan> cp_;
  bool pending_ = false;  // a new plan came while the worker ran
  QThread* worker_ = nullptr;
  std::shared_ptr<Result> result_;
  std::vector<RecomputePoint> points_;
  QString error_;
};

}  // namespace tr::gui

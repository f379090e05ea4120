// SPDX-License-Identifier: GPL-3.0-or-later
// What the runs overlay draws of one run: its step and epoch records at full
// resolution, and the x and y values of one metric against steps, epochs or
// wall time.
#pragma once

#include <QString>
#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/run_store.h>

namespace tr::gui {

struct RunCurves {
  int64_t id = 0;
  double started_at = 0;
  double global_batch = 0;  // images in a full step; 0 when the run does not say
  std::vector<store::StepRecord> steps;
  std::vector<store::EpochRecord> epochs;
};

enum class CurveAxis { Step, Epoch, WallTime };

struct CurveMetric {
  std::string key;  // a step column, or one of store::comparable_metrics()
  QString label;
  bool perStep = false;
  bool percent = false;  // fractions drawn as percentages
};

// Step metrics first (loss, top1, lr, loss_scale, step_images_per_s), then
// the epoch metrics compare_runs() takes.
const std::vector<CurveMetric>& curve_metrics();
const CurveMetric* find_curve_metric(const std::string& key);

struct CurveSeries {
  std::vector<double> x, y;  // x ascending; one point per record that has the metric
};

// Throws StoreError for an unknown run.
RunCurves load_run_curves(const store::RunStore& store, int64_t run);
CurveSeries curve_series(const RunCurves& run, const CurveMetric& metric, CurveAxis axis);

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Debiased exponential smoothing of a noisy curve (the step loss): an
// exponential moving average divided by (1 - weight^n), so the first points
// are not pulled towards zero. Incremental, so a live curve of a million
// points costs one multiply-add per new point.
#pragma once

#include <cstddef>
#include <vector>

namespace tr::gui {

class DebiasedSmoothing {
 public:
  // weight in [0, 1): 0 leaves the curve as it is.
  explicit DebiasedSmoothing(double weight = 0) { setWeight(weight); }

  void setWeight(double weight);
  double weight() const noexcept { return weight_; }

  void reset();
  // The smoothed value for the next raw value. NaN and infinite values pass
  // through without disturbing the average, so one bad step does not hide
  // the rest of the curve.
  double push(double value);

  // The whole curve smoothed at once.
  static std::vector<double> apply(const std::vector<double>& values, double weight);

 private:
  double weight_ = 0;
  double average_ = 0;
  double decay_ = 1;  // weight^n over the n finite values seen
};

}  // namespace tr::gui

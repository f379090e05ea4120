// SPDX-License-Identifier: GPL-3.0-or-later
#include "plot/debiased_smoothing.h"

#include <algorithm>
#include <cmath>

namespace tr::gui {

void DebiasedSmoothing::setWeight(double weight) {
  weight_ = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, 0.999999);
  reset();
}

void DebiasedSmoothing::reset() {
  average_ = 0;
  decay_ = 1;
}

double DebiasedSmoothing::push(double value) {
  if (!std::isfinite(value)) return value;
  average_ = weight_ * average_ + (1 - weight_) * value;
  decay_ *= weight_;
  return average_ / (1 - decay_);
}

std::vector<double> DebiasedSmoothing::apply(const std::vector<double>& values, double weight) {
  DebiasedSmoothing s(weight);
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) out.push_back(s.push(v));
  return out;
}

}  // namespace tr::gui

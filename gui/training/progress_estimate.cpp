// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/progress_estimate.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>

namespace tr::gui {

void ProgressEstimate::reset(int64_t epochs, int64_t max_steps) {
  *this = {};
  epochs_ = epochs;
  maxSteps_ = max_steps;
}

void ProgressEstimate::add(const StepSample& s) {
  if (first_ < 0) first_ = s.step;
  batches_ = s.batches;
  done_ = s.step + 1;
  elapsed_ = s.elapsed;
}

int64_t ProgressEstimate::total() const {
  if (batches_ <= 0) return -1;
  const int64_t all = epochs_ * batches_;
  return maxSteps_ >= 0 ? std::min(all, maxSteps_) : all;
}

double ProgressEstimate::etaSeconds() const {
  const int64_t run = done_ - first_;
  if (ended_ || first_ < 0 || run <= 0 || total() < 0) return -1;
  return elapsed_ / static_cast<double>(run) *
         static_cast<double>(std::max<int64_t>(0, total() - done_));
}

QString ProgressEstimate::text() const {
  const auto tr_ = [](const char* s) {
    return QCoreApplication::translate("tr::gui::TrainingView", s);
  };
  if (total() < 0) return tr_("waiting for the first step");
  const int64_t all = std::max<int64_t>(1, total());
  QString t = tr_("step %1 of %2 (%3%)")
                  .arg(done_)
                  .arg(total())
                  .arg(100.0 * static_cast<double>(done_) / static_cast<double>(all), 0, 'f', 1);
  const double eta = etaSeconds();
  if (eta >= 0) t += tr_(", ETA %1").arg(clock(eta));
  return t;
}

QString ProgressEstimate::clock(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  return QStringLiteral("%1:%2:%3")
      .arg(s / 3600)
      .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
      .arg(s % 60, 2, 10, QLatin1Char('0'));
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Text for run times and metrics.
#include "runs/run_text.h"

#include <QDateTime>
#include <algorithm>
#include <cmath>

namespace tr::gui {

QString run_local_time(double unix_seconds) {
  return QDateTime::fromSecsSinceEpoch(static_cast<qint64>(unix_seconds))
      .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

QString run_duration_text(double seconds) {
  const auto s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  return QStringLiteral("%1:%2:%3")
      .arg(s / 3600)
      .arg(s / 60 % 60, 2, 10, QLatin1Char('0'))
      .arg(s % 60, 2, 10, QLatin1Char('0'));
}

double run_seconds(const store::RunSummary& run) {
  return std::max(0.0, run.ended_at.value_or(run.updated_at) - run.started_at);
}

QString run_status_text(store::RunStatus status) {
  const std::string_view name = store::run_status_name(status);
  return QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
}

QString percent_text(const std::optional<double>& fraction) {
  if (!fraction || !std::isfinite(*fraction)) return QStringLiteral("-");
  return QString::number(100 * *fraction, 'f', 2) + QLatin1Char('%');
}

QString loss_text(const std::optional<double>& value) {
  if (!value) return QStringLiteral("-");
  return QString::number(*value, 'f', 4);
}

}  // namespace tr::gui

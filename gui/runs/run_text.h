// SPDX-License-Identifier: GPL-3.0-or-later
// How the runs view writes a run's times and metrics, the same way the
// CLI's `runs list` and `runs show` do, so both read alike.
#pragma once

#include <QString>
#include <optional>

#include <renaissance/run_records.h>

namespace tr::gui {

// Local time, "2024-05-01 14:03:22".
QString run_local_time(double unix_seconds);
// "h:mm:ss".
QString run_duration_text(double seconds);
// How long the run took, or has taken until its writer's last commit.
double run_seconds(const store::RunSummary& run);
QString run_status_text(store::RunStatus status);
// "91.23%" for 0.9123; "-" when absent.
QString percent_text(const std::optional<double>& fraction);
// Four decimals; "-" when absent.
QString loss_text(const std::optional<double>& value);

}  // namespace tr::gui

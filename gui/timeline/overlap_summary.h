// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's overlap statistics in words: per rank, how long each stream
// was busy, which streams ran at the same time, and how much of DEEP_COMM the
// first-layer backward hid (what the step schedule is built for).
#pragma once

#include <QString>
#include <vector>

#include <renaissance/profile.h>

namespace tr::gui {

QString overlap_summary(const std::vector<ProfileSpan>& spans);

// "42.5%": how the DEEP_COMM share is written, so tests can find it.
QString percent_text(double fraction);

}  // namespace tr::gui

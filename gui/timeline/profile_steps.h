// SPDX-License-Identifier: GPL-3.0-or-later
// The spans of one training step of a profile, and numbers such as steps or
// ranks in words ("3–5, 8"), for the timeline's step choice and caption.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include <renaissance/profile.h>

namespace tr::gui {

// The spans that say `step`, in their order.
std::vector<ProfileSpan> spans_of_step(const std::vector<ProfileSpan>& spans, int64_t step);

// Ascending numbers with runs joined: {3} -> "3", {3, 4, 5, 8} -> "3–5, 8".
QString number_ranges(const std::vector<int64_t>& ascending);

}  // namespace tr::gui

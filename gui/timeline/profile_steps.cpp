// SPDX-License-Identifier: GPL-3.0-or-later
// Steps of a profile and number ranges in words.
#include "timeline/profile_steps.h"

#include <QStringList>
#include <algorithm>
#include <iterator>

namespace tr::gui {

std::vector<ProfileSpan> spans_of_step(const std::vector<ProfileSpan>& spans, int64_t step) {
  std::vector<ProfileSpan> out;
  std::copy_if(spans.begin(), spans.end(), std::back_inserter(out),
               [step](const ProfileSpan& s) { return s.step == step; });
  return out;
}

QString number_ranges(const std::vector<int64_t>& ascending) {
  QStringList parts;
  for (size_t i = 0; i < ascending.size();) {
    size_t j = i;
    while (j + 1 < ascending.size() && ascending[j + 1] == ascending[j] + 1) ++j;
    parts << (i == j
                  ? QString::number(ascending[i])
                  : QString::number(ascending[i]) + QChar(0x2013) + QString::number(ascending[j]));
    i = j + 1;
  }
  return parts.join(QStringLiteral(", "));
}

}  // namespace tr::gui

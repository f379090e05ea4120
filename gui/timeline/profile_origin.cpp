// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's caption from a profile's origin and contents.
#include "timeline/profile_origin.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

#include "timeline/profile_steps.h"

namespace tr::gui {

namespace {

QString tr_(const char* text) {
  return QCoreApplication::translate("ProfileOrigin", text);
}

QString steps_text(const ProfileContents& c) {
  if (c.steps.empty()) return tr_("steps not recorded");
  const QString all =
      (c.steps.size() == 1 ? tr_("step %1") : tr_("steps %1")).arg(number_ranges(c.steps));
  if (c.shown) return tr_("step %1 of %2").arg(*c.shown).arg(all);
  // Spans of no step are shown with the others, so the caption owns up to them.
  return c.unknown_steps ? tr_("%1 and spans of no recorded step").arg(all) : all;
}

}  // namespace

QString profile_caption(const ProfileOrigin& origin, const ProfileContents& contents) {
  QStringList parts;
  if (!origin.trace_file.isEmpty()) parts << QFileInfo(origin.trace_file).fileName();
  if (origin.run_id > 0) parts << tr_("Run %1").arg(origin.run_id);
  if (!origin.project.isEmpty()) parts << origin.project;
  parts << steps_text(contents);
  if (!contents.ranks.empty())
    parts << (contents.ranks.size() == 1 ? tr_("rank %1") : tr_("ranks %1"))
                 .arg(number_ranges(contents.ranks));
  return parts.join(QStringLiteral(" · "));
}

}  // namespace tr::gui

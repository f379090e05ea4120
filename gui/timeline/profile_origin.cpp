// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's caption from a profile's origin and contents.
#include "timeline/profile_origin.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QStringList>

#include "timeline/profile_steps.h"

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct ProfileOriginText {
  Q_DECLARE_TR_FUNCTIONS(ProfileOrigin)
};

QString steps_text(const ProfileContents& c) {
  if (c.steps.empty()) return ProfileOriginText::tr("steps not recorded");
  const QString all =
      (c.steps.size() == 1 ? ProfileOriginText::tr("step %1") : ProfileOriginText::tr("steps %1"))
          .arg(number_ranges(c.steps));
  if (c.shown) return ProfileOriginText::tr("step %1 of %2").arg(*c.shown).arg(all);
  // Spans of no step are shown with the others, so the caption owns up to them.
  return c.unknown_steps ? ProfileOriginText::tr("%1 and spans of no recorded step").arg(all) : all;
}

}  // namespace

QString profile_caption(const ProfileOrigin& origin, const ProfileContents& contents) {
  QStringList parts;
  if (!origin.trace_file.isEmpty()) parts << QFileInfo(origin.trace_file).fileName();
  if (origin.run_id > 0) parts << ProfileOriginText::tr("Run %1").arg(origin.run_id);
  if (!origin.project.isEmpty()) parts << origin.project;
  parts << steps_text(contents);
  if (!contents.ranks.empty())
    parts << (contents.ranks.size() == 1 ? ProfileOriginText::tr("rank %1")
                                         : ProfileOriginText::tr("ranks %1"))
                 .arg(number_ranges(contents.ranks));
  return parts.join(QStringLiteral(" · "));
}

}  // namespace tr::gui

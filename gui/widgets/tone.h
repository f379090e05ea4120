// SPDX-License-Identifier: GPL-3.0-or-later
// Tones: what a text means (an error, a warning banner) rather than a fixed
// colour, so the application's theme (light or dark) picks a colour that
// reads on its background. A widget carries its tone as a property; the
// theme's style sheet colours each tone.
#pragma once

#include <QStyle>
#include <QVariant>
#include <QWidget>

namespace tr::gui {

enum class Tone { Normal, Error, Banner };

inline const char* tone_name(Tone t) {
  switch (t) {
    case Tone::Error:
      return "error";
    case Tone::Banner:
      return "banner";
    case Tone::Normal:
      break;
  }
  return "";
}

// Re-polishes the widget, so a tone changed after it was shown takes effect.
inline void set_tone(QWidget* w, Tone t) {
  if (w->property("tone").toString() == QLatin1String(tone_name(t))) return;
  w->setProperty("tone", QString::fromLatin1(tone_name(t)));
  w->style()->unpolish(w);
  w->style()->polish(w);
  w->update();
}

}  // namespace tr::gui

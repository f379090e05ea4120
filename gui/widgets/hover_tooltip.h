// SPDX-License-Identifier: GPL-3.0-or-later
// The tooltip of a custom-painted widget whose text depends on the point
// under the cursor (region bands, timeline bars): `describe(pos)` gives it,
// empty hides the tooltip. Returns true when `event` was a tooltip request.
#pragma once

#include <QHelpEvent>
#include <QToolTip>
#include <QWidget>

namespace tr::gui {

template <class Describe>
bool show_hover_tooltip(QWidget* widget, QEvent* event, Describe describe) {
  if (event->type() != QEvent::ToolTip) return false;
  auto* help = static_cast<QHelpEvent*>(event);
  const QString text = describe(help->pos());
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(help->globalPos(), text, widget);
  return true;
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// The workbench's theme: the system's (the palette the desktop gives, light
// or dark), or light or dark whatever the desktop says. Views draw with the
// application palette, so they follow; tones (widgets/tone.h) get colours
// that read on it.
#pragma once

#include <QPalette>
#include <QString>
#include <optional>

namespace tr::gui {

enum class Theme { System, Light, Dark };

QString theme_key(Theme t);  // "system", "light", "dark"
std::optional<Theme> theme_from_key(const QString& key);

// Call once the QApplication exists, before any window: remembers the
// system's palette, then applies `t`.
void apply_theme(Theme t);
Theme current_theme();
bool is_dark(const QPalette& palette);

}  // namespace tr::gui

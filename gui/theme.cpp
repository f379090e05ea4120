// SPDX-License-Identifier: GPL-3.0-or-later
#include "theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

namespace tr::gui {

namespace {

struct State {
  bool saved = false;
  QPalette system;
  QString systemStyle;
  Theme current = Theme::System;
};

State& state() {
  static State s;
  return s;
}

QPalette dark_palette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x30), base(0x1e, 0x1f, 0x22), text(0xe6, 0xe6, 0xe6);
  const QColor disabled(0x80, 0x80, 0x80), highlight(0x3d, 0x7e, 0xd6);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2c));
  p.setColor(QPalette::ToolTipBase, QColor(0x3c, 0x3f, 0x41));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6e, 0x6e));
  p.setColor(QPalette::Light, QColor(0x45, 0x48, 0x4c));
  p.setColor(QPalette::Midlight, QColor(0x3a, 0x3d, 0x41));
  p.setColor(QPalette::Mid, QColor(0x25, 0x26, 0x29));
  p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1b));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, QColor(0x6c, 0xb0, 0xff));
  p.setColor(QPalette::LinkVisited, QColor(0xb3, 0x9d, 0xdb));
  for (QPalette::ColorRole r : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, r, disabled);
  return p;
}

// Colours of the tones (widgets/tone.h), chosen to read on the palette.
QString tone_sheet(bool dark) {
  return dark ? QStringLiteral(
                    "*[tone=\"error\"] { color: #ff8a80; }"
                    "QLabel[tone=\"banner\"] { background: #4a3d10; color: #ffe8a3; padding: 4px;"
                    " border-radius: 3px; }")
              : QStringLiteral(
                    "*[tone=\"error\"] { color: #c62828; }"
                    "QLabel[tone=\"banner\"] { background: #fff3cd; color: #5c4400; padding: 4px;"
                    " border-radius: 3px; }");
}

}  // namespace

QString theme_key(Theme t) {
  switch (t) {
    case Theme::Light:
      return QStringLiteral("light");
    case Theme::Dark:
      return QStringLiteral("dark");
    case Theme::System:
      break;
  }
  return QStringLiteral("system");
}

std::optional<Theme> theme_from_key(const QString& key) {
  for (Theme t : {Theme::System, Theme::Light, Theme::Dark})
    if (key == theme_key(t)) return t;
  return std::nullopt;
}

bool is_dark(const QPalette& palette) {
  return palette.color(QPalette::Window).lightness() < 128;
}

void apply_theme(Theme t) {
  State& s = state();
  if (!s.saved) {
    s.system = QApplication::palette();
    s.systemStyle = QApplication::style()->name();
    s.saved = true;
  }
  s.current = t;
  QPalette palette;
  switch (t) {
    case Theme::System:
      // The desktop's own look: its style and palette, light or dark.
      QApplication::setStyle(QStyleFactory::create(s.systemStyle));
      palette = s.system;
      break;
    case Theme::Light:
      QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
      palette = QApplication::style()->standardPalette();
      break;
    case Theme::Dark:
      QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
      palette = dark_palette();
      break;
  }
  QApplication::setPalette(palette);
  qApp->setStyleSheet(tone_sheet(is_dark(palette)));
}

Theme current_theme() {
  return state().current;
}

}  // namespace tr::gui

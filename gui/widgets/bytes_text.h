// SPDX-License-Identifier: GPL-3.0-or-later
// Byte counts as the workbench shows them ("8.09 MiB"), the engine's
// formatting in Qt's string type, so every view and the CLI agree; and
// exact, with grouped digits ("8,482,816"), where an offset must be read.
#pragma once

#include <QLocale>
#include <QString>
#include <cstdint>

#include <renaissance/plan_report.h>

namespace tr::gui {

inline QString bytes_text(uint64_t bytes) {
  return QString::fromStdString(human_bytes(bytes));
}

inline QString exact_bytes_text(uint64_t bytes) {
  return QLocale(QLocale::English).toString(static_cast<qulonglong>(bytes));
}

}  // namespace tr::gui

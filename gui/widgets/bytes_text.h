// SPDX-License-Identifier: GPL-3.0-or-later
// Byte counts as the workbench shows them ("8.09 MiB"), the engine's
// formatting in Qt's string type, so every view and the CLI agree.
#pragma once

#include <QString>
#include <cstdint>

#include <renaissance/plan_report.h>

namespace tr::gui {

inline QString bytes_text(uint64_t bytes) {
  return QString::fromStdString(human_bytes(bytes));
}

}  // namespace tr::gui

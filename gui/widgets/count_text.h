// SPDX-License-Identifier: GPL-3.0-or-later
// A count with its noun in the right number ("1 rank arena", "2 rank
// arenas"), instead of "(s)": the workbench ships no translation whose
// plural forms would turn tr("%n arena(s)") into English.
#pragma once

#include <QString>
#include <QtGlobal>

namespace tr::gui {

// `one` and `many` each hold %1 for the number: tr("%1 span"), tr("%1 spans").
inline QString count_text(qint64 n, const QString& one, const QString& many) {
  return (n == 1 ? one : many).arg(n);
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// What users call a layer's fields: "params.out_channels" is "Output
// channels". One table for the properties form, the undo history and the
// problems list, so the three never name a field differently; the engine's
// key stays visible in tooltips.
#pragma once

#include <QString>

namespace tr::gui {

// The label of a node field by its key in the project file ("params.kernel_h",
// or a key the problems use for several fields, "params.kernel"); empty when
// the key is not a node field.
QString param_label(const QString& key);
// The key of the form field that edits `key` ("params.kernel" is edited
// first by "params.kernel_h"); `key` itself when it has its own editor.
QString param_editor_key(const QString& key);
// "Output channels" -> "output channels", for the middle of a sentence.
QString in_sentence(const QString& label);

}  // namespace tr::gui

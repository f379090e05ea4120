// SPDX-License-Identifier: GPL-3.0-or-later
#include "designer/param_names.h"

#include <QCoreApplication>

namespace tr::gui {

namespace {

struct ParamName {
  const char* key;
  const char* label;
  const char* editor;  // null: the key's own editor
};

// Translated through QCoreApplication so the table stays a constant.
constexpr ParamName kNames[] = {
    {"id", QT_TRANSLATE_NOOP("ParamNames", "Id"), nullptr},
    {"type", QT_TRANSLATE_NOOP("ParamNames", "Layer type"), nullptr},
    {"params", QT_TRANSLATE_NOOP("ParamNames", "Parameters"), "params.kernel_h"},
    {"params.height", QT_TRANSLATE_NOOP("ParamNames", "Height"), nullptr},
    {"params.width", QT_TRANSLATE_NOOP("ParamNames", "Width"), nullptr},
    {"params.channels", QT_TRANSLATE_NOOP("ParamNames", "Channels"), nullptr},
    {"params.out_channels", QT_TRANSLATE_NOOP("ParamNames", "Output channels"), nullptr},
    {"params.out_features", QT_TRANSLATE_NOOP("ParamNames", "Output features"), nullptr},
    {"params.kernel", QT_TRANSLATE_NOOP("ParamNames", "Kernel"), "params.kernel_h"},
    {"params.kernel_h", QT_TRANSLATE_NOOP("ParamNames", "Kernel height"), nullptr},
    {"params.kernel_w", QT_TRANSLATE_NOOP("ParamNames", "Kernel width"), nullptr},
    {"params.stride", QT_TRANSLATE_NOOP("ParamNames", "Stride"), "params.stride_h"},
    {"params.stride_h", QT_TRANSLATE_NOOP("ParamNames", "Stride (rows)"), nullptr},
    {"params.stride_w", QT_TRANSLATE_NOOP("ParamNames", "Stride (columns)"), nullptr},
    {"params.padding", QT_TRANSLATE_NOOP("ParamNames", "Padding"), "params.pad_h"},
    {"params.pad_h", QT_TRANSLATE_NOOP("ParamNames", "Padding (rows)"), nullptr},
    {"params.pad_w", QT_TRANSLATE_NOOP("ParamNames", "Padding (columns)"), nullptr},
    {"params.bias", QT_TRANSLATE_NOOP("ParamNames", "Bias"), nullptr},
    {"params.eps", QT_TRANSLATE_NOOP("ParamNames", "Epsilon"), nullptr},
    {"params.momentum", QT_TRANSLATE_NOOP("ParamNames", "Momentum"), nullptr},
    {"params.p", QT_TRANSLATE_NOOP("ParamNames", "Drop probability"), nullptr},
};

const ParamName* find(const QString& key) {
  for (const ParamName& n : kNames)
    if (key == QLatin1String(n.key)) return &n;
  return nullptr;
}

}  // namespace

QString param_label(const QString& key) {
  if (const ParamName* n = find(key)) return QCoreApplication::translate("ParamNames", n->label);
  // A parameter without its own label (a new layer's): its file key in words,
  // "params.negative_slope" -> "Negative slope".
  if (!key.startsWith(QLatin1String("params."))) return {};
  QString words = key.mid(7).replace(QLatin1Char('_'), QLatin1Char(' '));
  if (!words.isEmpty()) words[0] = words[0].toUpper();
  return words;
}

QString param_editor_key(const QString& key) {
  const ParamName* n = find(key);
  return n && n->editor ? QString::fromLatin1(n->editor) : key;
}

QString in_sentence(const QString& label) {
  // Keep acronyms ("EMA decay") as they are.
  if (label.size() > 1 && label[1].isUpper()) return label;
  return label.isEmpty() ? label : label.left(1).toLower() + label.mid(1);
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
#include "undo_keys_filter.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QKeyEvent>
#include <QKeySequence>
#include <QLineEdit>

namespace tr::gui {

namespace {

bool is_undo_or_redo(const QKeyEvent* key) {
  if (key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo)) return true;
  // Ctrl+Y redoes too (the window's redo action takes it besides the platform's keys).
  return key->keyCombination() == QKeyCombination(Qt::ControlModifier, Qt::Key_Y);
}

}  // namespace

UndoKeysFilter::UndoKeysFilter(QObject* parent) : QObject(parent) {
  qApp->installEventFilter(this);
}

void UndoKeysFilter::watch(QWidget* form, std::function<void()> commit) {
  forms_.push_back({form, std::move(commit)});
}

bool UndoKeysFilter::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() != QEvent::ShortcutOverride) return false;
  // A spin box has the focus and hands the event to its line edit itself.
  auto* field = qobject_cast<QWidget*>(watched);
  if (!qobject_cast<QLineEdit*>(field) && !qobject_cast<QAbstractSpinBox*>(field)) return false;
  if (!is_undo_or_redo(static_cast<QKeyEvent*>(event))) return false;
  for (const Form& f : forms_) {
    if (!f.widget->isAncestorOf(field)) continue;
    f.commit();
    // Not accepted: the key is a shortcut, and the window's Undo or Redo takes it.
    event->ignore();
    return true;
  }
  return false;
}

}  // namespace tr::gui

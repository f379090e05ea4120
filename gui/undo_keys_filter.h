// SPDX-License-Identifier: GPL-3.0-or-later
// UndoKeysFilter: Undo and Redo keys typed in a form's field (the layer
// properties, the training settings) undo the project, as everywhere else in
// the window. A line edit or spin box claims those keys for its own text
// history, so the window's undo never heard them; this filter first commits
// what is still being typed in the field (one undoable edit), then lets the
// window's actions take the keys.
#pragma once

#include <QObject>
#include <functional>
#include <vector>

class QWidget;

namespace tr::gui {

class UndoKeysFilter : public QObject {
  Q_OBJECT

 public:
  explicit UndoKeysFilter(QObject* parent = nullptr);
  // The fields inside `form` give their undo keys to the window; `commit`
  // applies what is typed but not yet committed there.
  void watch(QWidget* form, std::function<void()> commit);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  struct Form {
    QWidget* widget;
    std::function<void()> commit;
  };
  std::vector<Form> forms_;
};

}  // namespace tr::gui

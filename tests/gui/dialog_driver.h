// SPDX-License-Identifier: GPL-3.0-or-later
// DialogDriver: answers the next modal dialog the way a user would, for the
// GUI tests: a file dialog gets a path typed and accepted, a message box a
// button clicked. The workbench's own dialogs run unmodified (offscreen,
// Qt draws its own file dialog, so the test can type into it).
#pragma once

#include <QAbstractButton>
#include <QApplication>
#include <QFileDialog>
#include <QLineEdit>
#include <QMessageBox>
#include <QTimer>
#include <QtTest>
#include <functional>

namespace tr::gui {

class DialogDriver {
 public:
  // Calls `answer` on the first modal dialog that opens from now on.
  explicit DialogDriver(std::function<void(QWidget*)> answer) : answer_(std::move(answer)) {
    timer_.setInterval(10);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      QWidget* modal = QApplication::activeModalWidget();
      if (!modal) return;
      timer_.stop();
      seen_ = modal->metaObject()->className();
      answer_(modal);
    });
    timer_.start();
  }
  bool answered() const { return !timer_.isActive(); }
  QString dialogClass() const { return seen_; }

  // Types `path` into a file dialog's name field and presses Enter.
  static DialogDriver choosePath(const QString& path) {
    return DialogDriver([path](QWidget* w) {
      auto* dialog = qobject_cast<QFileDialog*>(w);
      if (!dialog) return;
      auto* name = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"));
      if (!name) {
        QFAIL("the file dialog has no name field to type into");
        return;
      }
      name->setText(path);
      QTest::keyClick(name, Qt::Key_Return);
    });
  }
  // Clicks that standard button of a message box.
  static DialogDriver clickButton(QMessageBox::StandardButton button) {
    return DialogDriver([button](QWidget* w) {
      auto* box = qobject_cast<QMessageBox*>(w);
      if (!box) return;
      if (QAbstractButton* b = box->button(button)) QTest::mouseClick(b, Qt::LeftButton);
    });
  }

 private:
  std::function<void(QWidget*)> answer_;
  QTimer timer_;
  QString seen_;
};

}  // namespace tr::gui

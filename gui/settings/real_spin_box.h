// SPDX-License-Identifier: GPL-3.0-or-later
// RealSpinBox: a spin box for settings that span decades (learning rates,
// epsilons, decays). QDoubleSpinBox shows a fixed number of decimals and
// rounds to them, so 1e-8 would read 0.00 and a loaded 0.0003 would change
// when edited; this one keeps every double, shows the shortest text that
// reads back the same and accepts exponents ("3e-4").
#pragma once

#include <QDoubleSpinBox>

namespace tr::gui {

class RealSpinBox : public QDoubleSpinBox {
  Q_OBJECT

 public:
  explicit RealSpinBox(QWidget* parent = nullptr);

  // The shortest text that reads back as `value`: plain down to 0.0001
  // ("0.0003"), with an exponent below and for the very large ("1e-8").
  static QString text(double value, const QLocale& locale);

  QString textFromValue(double value) const override;
  double valueFromText(const QString& text) const override;
  QValidator::State validate(QString& text, int& pos) const override;
  void fixup(QString& text) const override;
  void stepBy(int steps) override;
  // Wide enough for the texts it shows ("0.0005", "1e-08"), not for its
  // range's ends (1.8e308 written out), which made every form too wide.
  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 private:
  // The value of `text` in the widget's locale or, failing that, in C
  // notation; false when it is not a finite number.
  bool parse(const QString& text, double& value) const;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// RealSpinBox: shortest round-trip display, exponent input, decade steps.
#include "real_spin_box.h"

#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace tr::gui {

RealSpinBox::RealSpinBox(QWidget* parent) : QDoubleSpinBox(parent) {
  // The most QDoubleSpinBox allows: its rounding to decimals then keeps
  // every double a project file can hold.
  setDecimals(323);
}

QString RealSpinBox::text(double value, const QLocale& locale) {
  QLocale l = locale;
  l.setNumberOptions(QLocale::OmitGroupSeparator | QLocale::OmitLeadingZeroInExponent);
  // Where printf's %g switches; Qt's shortest 'g' picks whichever text is
  // shorter and would show a learning rate of 0.0005 as 5e-4.
  const int exponent = value == 0 ? 0 : static_cast<int>(std::floor(std::log10(std::abs(value))));
  const char format = exponent >= -4 && exponent < 17 ? 'f' : 'e';
  return l.toString(value, format, QLocale::FloatingPointShortest);
}

QString RealSpinBox::textFromValue(double value) const {
  return text(value, locale());
}

double RealSpinBox::valueFromText(const QString& text) const {
  double v = 0;
  return parse(text, v) ? v : value();
}

QValidator::State RealSpinBox::validate(QString& text, int&) const {
  const QString t = text.trimmed();
  double v = 0;
  if (parse(t, v))
    return v >= minimum() && v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
  // What may still become a number as the user goes on typing: "", "-", "0.", "1e-".
  static const QRegularExpression prefix(
      QStringLiteral("^[+-]?[0-9]*([.,][0-9]*)?([eE][+-]?[0-9]*)?$"));
  return prefix.match(t).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

void RealSpinBox::fixup(QString& text) const {
  text = text.trimmed();
}

void RealSpinBox::stepBy(int steps) {
  // Text typed but not yet interpreted is where the step starts, as in QAbstractSpinBox.
  QString text = cleanText();
  double from = value();
  parse(text, from);
  double step = singleStep();
  // Qt's adaptive step, a tenth of the value's decade, except from 0 where
  // Qt's would be 10^-decimals; stepping toward 0 from 0.1 gives 0.099.
  if (stepType() == AdaptiveDecimalStepType && from != 0) {
    double magnitude = std::abs(from);
    if ((from < 0) != (steps < 0)) magnitude /= 1.01;
    step = std::pow(10.0, std::floor(std::log10(magnitude)) - 1);
  }
  double to = from + steps * step;
  // Fifteen significant digits hide the binary noise of the sum: 0.05 + 0.001
  // reads 0.051, not 0.051000000000000004.
  to = std::isfinite(to) ? QString::number(to, 'g', 15).toDouble()
                         : (steps > 0 ? maximum() : minimum());
  setValue(to);
  selectAll();
}

bool RealSpinBox::parse(const QString& text, double& value) const {
  bool ok = false;
  double v = locale().toDouble(text, &ok);
  if (!ok) v = QLocale::c().toDouble(text, &ok);
  if (!ok || !std::isfinite(v)) return false;
  value = v;
  return true;
}

QSize RealSpinBox::minimumSizeHint() const {
  QSize hint = QDoubleSpinBox::minimumSizeHint();
  const int typical = fontMetrics().horizontalAdvance(QStringLiteral("-0.000123e-300"));
  const int range = std::max(fontMetrics().horizontalAdvance(textFromValue(minimum())),
                             fontMetrics().horizontalAdvance(textFromValue(maximum())));
  // The frame and arrows stay; only the text part shrinks to a typical value.
  hint.setWidth(hint.width() - std::max(0, range - typical));
  return hint;
}

QSize RealSpinBox::sizeHint() const {
  QSize hint = QDoubleSpinBox::sizeHint();
  hint.setWidth(std::min(hint.width(), minimumSizeHint().width() + 12));
  return hint;
}

}  // namespace tr::gui

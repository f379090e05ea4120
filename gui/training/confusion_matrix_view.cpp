// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/confusion_matrix_view.h"

#include <QHeaderView>
#include <numeric>

#include <renaissance/run_records.h>

namespace tr::gui {

namespace {

// White at 0, the full colour at share 1.
QColor shade(const QColor& full, double share) {
  const auto mix = [share](int c) { return static_cast<int>(255 + (c - 255) * share); };
  return QColor(mix(full.red()), mix(full.green()), mix(full.blue()));
}

QTableWidgetItem* cell(const QString& text, const QColor& background, const QString& tip) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  item->setBackground(background);
  // Dark cells get light text.
  item->setForeground(background.lightnessF() < 0.55 ? Qt::white : Qt::black);
  item->setToolTip(tip);
  return item;
}

}  // namespace

ConfusionMatrixView::ConfusionMatrixView(QWidget* parent) : QTableWidget(parent) {
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionMode(QAbstractItemView::NoSelection);
  horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  setToolTip(
      tr("Rows: true class; columns: predicted class. Colour: share of the row's samples "
         "(green: correct, red: mistaken for that class)."));
}

void ConfusionMatrixView::clearMatrix() {
  classes_ = 0;
  counts_.clear();
  accuracy_.clear();
  clear();
  setRowCount(0);
  setColumnCount(0);
}

int64_t ConfusionMatrixView::total() const {
  return std::accumulate(counts_.begin(), counts_.end(), int64_t{0});
}

void ConfusionMatrixView::setMatrix(const std::vector<int64_t>& counts, const QStringList& names) {
  clearMatrix();
  const int64_t n = store::confusion_classes(counts.size());
  if (n <= 0) return;
  classes_ = static_cast<int>(n);
  counts_ = counts;
  accuracy_ = store::per_class_accuracy(counts_);
  QStringList labels;
  for (int c = 0; c < classes_; ++c)
    labels << (c < names.size() ? names[c] : tr("class %1").arg(c));
  setRowCount(classes_);
  setColumnCount(classes_ + 1);
  // Rows carry the names; columns the class numbers (the names as their
  // tooltips), so ten classes fit the view's width.
  QStringList rows;
  for (int c = 0; c < classes_; ++c) rows << QStringLiteral("%1 %2").arg(c).arg(labels[c]);
  setVerticalHeaderLabels(rows);
  for (int c = 0; c <= classes_; ++c) {
    auto* header = new QTableWidgetItem(c < classes_ ? QString::number(c) : tr("accuracy"));
    header->setToolTip(c < classes_ ? tr("predicted %1").arg(labels[c])
                                    : tr("share of the class's samples predicted right"));
    setHorizontalHeaderItem(c, header);
  }
  const QColor right(0x2e, 0x7d, 0x32), wrong(0xc6, 0x28, 0x28);
  for (int t = 0; t < classes_; ++t) {
    const auto row = counts_.begin() + static_cast<ptrdiff_t>(t) * classes_;
    const int64_t row_sum = std::accumulate(row, row + classes_, int64_t{0});
    for (int p = 0; p < classes_; ++p) {
      const int64_t v = row[p];
      const double share = row_sum > 0 ? static_cast<double>(v) / static_cast<double>(row_sum) : 0;
      const QString tip = tr("true %1, predicted %2: %3 (%4% of %1)")
                              .arg(labels[t], labels[p])
                              .arg(v)
                              .arg(100 * share, 0, 'f', 1);
      setItem(t, p, cell(QString::number(v), shade(t == p ? right : wrong, share), tip));
    }
    const double acc = accuracy_[static_cast<size_t>(t)];
    setItem(t, classes_,
            cell(QStringLiteral("%1%").arg(100 * acc, 0, 'f', 1), shade(right, acc),
                 tr("%1: %2 of %3 correct").arg(labels[t]).arg(row[t]).arg(row_sum)));
  }
}

}  // namespace tr::gui

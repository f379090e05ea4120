// SPDX-License-Identifier: GPL-3.0-or-later
// ConfusionMatrixView: a validation's confusion matrix (row: true class,
// column: predicted), each cell coloured by its share of the row (green on
// the diagonal, red off it), with each class's accuracy in the last column.
#pragma once

#include <QStringList>
#include <QTableWidget>
#include <cstdint>
#include <vector>

namespace tr::gui {

class ConfusionMatrixView : public QTableWidget {
  Q_OBJECT

 public:
  explicit ConfusionMatrixView(QWidget* parent = nullptr);

  // `counts` is classes x classes, row-major; a matrix that is not square
  // clears the view. `names` may be shorter than the classes ("class N").
  void setMatrix(const std::vector<int64_t>& counts, const QStringList& names);
  void clearMatrix();

  int classes() const { return classes_; }
  const std::vector<int64_t>& counts() const { return counts_; }
  int64_t total() const;  // samples validated
  // Per class: correct over the class's samples (0 without samples).
  const std::vector<double>& perClassAccuracy() const { return accuracy_; }

 private:
  int classes_ = 0;
  std::vector<int64_t> counts_;
  std::vector<double> accuracy_;
};

}  // namespace tr::gui

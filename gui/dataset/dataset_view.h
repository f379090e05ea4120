// SPDX-License-Identifier: GPL-3.0-or-later
// DatasetView, the Data tab: what the project's dataset holds (images per
// class in each split), the first training images of an epoch as the
// network sees them (after the project's shuffling, crop and flip), and the
// training pixels' mean and standard deviation, which one click (one undo
// step) makes the project's normalisation. The dataset loads on a thread of
// its own when the view is shown and whenever its settings change.
#pragma once

#include <QString>
#include <QThread>
#include <QWidget>
#include <memory>

#include <renaissance/dataset_preview.h>

class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace tr::gui {

class ProjectDocument;
class SampleGrid;

class DatasetView : public QWidget {
  Q_OBJECT

 public:
  explicit DatasetView(ProjectDocument* doc, QWidget* parent = nullptr);
  ~DatasetView() override;

  static constexpr int kSamples = 48;

  // For tests: whether the last load is shown (no load running or due).
  bool isCurrent() const;
  const DatasetPreview& preview() const { return preview_; }
  QString error() const { return error_; }
  SampleGrid* grid() const { return grid_; }
  QTableWidget* counts() const { return counts_; }
  QPushButton* useStatistics() const { return useStats_; }
  QSpinBox* epoch() const { return epoch_; }
  QLabel* statistics() const { return stats_; }

  // Sets the project's mean and std to the measured ones (one undo step).
  void applyStatistics();

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void reloadIfStale();
  void startLoad();
  void loaded();
  void updateStatistics();

  ProjectDocument* doc_;
  QLabel* source_;
  QLabel* stats_;
  QSpinBox* epoch_;
  QPushButton* useStats_;
  QTableWidget* counts_;
  SampleGrid* grid_;

  // What the shown preview was made from; a load runs for `loading_`.
  QString shownKey_, loadingKey_;
  QThread* worker_ = nullptr;
  struct Result {
    DatasetPreview preview;
    QString error;
  };
  std::shared_ptr<Result> result_;
  DatasetPreview preview_;
  QString error_;
};

}  // namespace tr::gui

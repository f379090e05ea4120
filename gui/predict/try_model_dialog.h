// SPDX-License-Identifier: GPL-3.0-or-later
// Run > Try the Model: images dropped or chosen (files, or a folder with one
// subfolder per class) classified by the open design with a checkpoint's
// weights: each image's five most likely classes, misclassified ones first,
// and the accuracy where the images are labelled. It opens with the weights
// find_model_weights chose and says where they come from, or why there are
// none; a path typed into its field is taken with Enter.
#pragma once

#include <QDialog>
#include <QStringList>

#include <renaissance/predict.h>
#include <renaissance/project.h>
#include "predict/model_weights.h"

class QLabel;
class QLineEdit;
class QTableWidget;

namespace tr::gui {

class TryModelDialog : public QDialog {
  Q_OBJECT

 public:
  TryModelDialog(const Project& project, const ModelWeights& weights, QWidget* parent = nullptr);

  // Without dialogs (and for tests): classify these images, or this
  // folder's; false with the reason shown (and returned) when nothing could
  // be classified.
  bool classifyFiles(const QStringList& files, QString* error = nullptr);
  bool classifyFolder(const QString& dir, QString* error = nullptr);
  void setCheckpoint(const QString& path);
  QString checkpoint() const;
  // Where Images… and Folder… start: the folder images were last taken
  // from, else an image-folder project's validation (or training) folder,
  // else Pictures; never the folder the workbench was started in.
  QString imagesFolder() const;

  QTableWidget* table() const { return table_; }
  QString summary() const;
  // Which weights classify: where they come from, or why there are none.
  QString weightsText() const;

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  bool classify(const std::vector<PredictImage>& images, QString* error);
  // Reads the checkpoint the field names (Enter) and says what it holds.
  void takeTypedCheckpoint();
  void showReport(const PredictReport& report);
  void rememberImages(const QString& folder);

  Project project_;
  QLineEdit* checkpoint_;
  QLabel* weights_;
  QTableWidget* table_;
  QLabel* summary_;
};

}  // namespace tr::gui

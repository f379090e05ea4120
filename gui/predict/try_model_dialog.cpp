// SPDX-License-Identifier: GPL-3.0-or-later
#include "predict/try_model_dialog.h"

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QPixmap>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>

namespace tr::gui {

namespace {

enum Column { kImage, kFile, kTop, kTruth, kColumns };

}  // namespace

TryModelDialog::TryModelDialog(const Project& project, const ModelWeights& weights, QWidget* parent)
    : QDialog(parent), project_(project) {
  setWindowTitle(tr("Try %1").arg(QString::fromStdString(project.name)));
  setAcceptDrops(true);
  resize(900, 560);
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  top->addWidget(new QLabel(tr("Checkpoint:"), this));
  checkpoint_ = new QLineEdit(weights.path, this);
  checkpoint_->setObjectName(QStringLiteral("checkpoint"));
  checkpoint_->setPlaceholderText(tr("the weights to classify with (a .ckpt file)"));
  // Enter takes the path typed (and says what it holds), not a button's click.
  connect(checkpoint_, &QLineEdit::returnPressed, this, &TryModelDialog::takeTypedCheckpoint);
  top->addWidget(checkpoint_, 1);
  auto* browse = new QPushButton(tr("Browse…"), this);
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Checkpoint"), checkpoint_->text(),
                                                   tr("Checkpoints (*.ckpt);;All files (*)"));
    if (f.isEmpty()) return;
    checkpoint_->setText(f);
    takeTypedCheckpoint();
  });
  top->addWidget(browse);
  auto* files = new QPushButton(tr("Images…"), this);
  connect(files, &QPushButton::clicked, this, [this] {
    const QStringList f = QFileDialog::getOpenFileNames(
        this, tr("Images to classify"), imagesFolder(), tr("Images (*.png *.jpg *.jpeg)"));
    if (f.isEmpty()) return;
    rememberImages(QFileInfo(f.front()).absolutePath());
    classifyFiles(f);
  });
  top->addWidget(files);
  auto* folder = new QPushButton(tr("Folder…"), this);
  connect(folder, &QPushButton::clicked, this, [this] {
    const QString d =
        QFileDialog::getExistingDirectory(this, tr("Folder of images"), imagesFolder());
    if (d.isEmpty()) return;
    // The folder above a scored folder of classes is where the next one is.
    rememberImages(QFileInfo(d).absolutePath());
    classifyFolder(d);
  });
  top->addWidget(folder);
  for (QPushButton* b : {browse, files, folder}) b->setAutoDefault(false);
  layout->addLayout(top);
  weights_ = new QLabel(
      weights.path.isEmpty() ? weights.origin : tr("Weights: %1.").arg(weights.origin), this);
  weights_->setObjectName(QStringLiteral("weightsInfo"));
  weights_->setWordWrap(true);
  layout->addWidget(weights_);
  summary_ = new QLabel(tr("Drop images or a folder here (a folder of class folders is scored "
                           "against its labels)."),
                        this);
  summary_->setWordWrap(true);
  summary_->setObjectName(QStringLiteral("summary"));
  layout->addWidget(summary_);
  table_ = new QTableWidget(0, kColumns, this);
  table_->setHorizontalHeaderLabels({tr("Image"), tr("File"), tr("Most likely"), tr("Is")});
  table_->horizontalHeader()->setSectionResizeMode(kTop, QHeaderView::Stretch);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setIconSize(QSize(48, 48));
  layout->addWidget(table_, 1);
}

namespace {

const QString kImagesKey = QStringLiteral("predict/imagesFolder");

}  // namespace

QString TryModelDialog::imagesFolder() const {
  const QString last = QSettings().value(kImagesKey).toString();
  if (!last.isEmpty() && QFileInfo(last).isDir()) return last;
  if (project_.dataset.kind == DatasetKind::ImageFolder)
    for (const std::string& dir : {project_.dataset.val_path, project_.dataset.path})
      if (!dir.empty()) {
        // As the data loader reads it: a relative folder from the working one.
        const QFileInfo folder(QString::fromStdString(dir));
        if (folder.isDir()) return folder.absoluteFilePath();
      }
  const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
  return QFileInfo(pictures).isDir() ? pictures : QDir::homePath();
}

void TryModelDialog::rememberImages(const QString& folder) {
  QSettings().setValue(kImagesKey, folder);
}

void TryModelDialog::setCheckpoint(const QString& path) {
  checkpoint_->setText(path);
}

QString TryModelDialog::checkpoint() const {
  return checkpoint_->text().trimmed();
}

QString TryModelDialog::weightsText() const {
  return weights_->text();
}

void TryModelDialog::takeTypedCheckpoint() {
  const QString path = checkpoint();
  if (path.isEmpty()) {
    weights_->setText(tr("Choose the checkpoint whose weights classify the images."));
    return;
  }
  try {
    const Checkpoint c = read_checkpoint(path.toStdString());
    weights_->setText(tr("Weights: %1 (of project '%2', step %3).")
                          .arg(path, QString::fromStdString(c.project_name))
                          .arg(c.position.step));
  } catch (const UsageError& e) {
    weights_->setText(QString::fromStdString(e.what()));
  }
}

QString TryModelDialog::summary() const {
  return summary_->text();
}

bool TryModelDialog::classifyFiles(const QStringList& files, QString* error) {
  std::vector<PredictImage> images;
  for (const QString& f : files) images.push_back({f.toStdString(), -1});
  return classify(images, error);
}

bool TryModelDialog::classifyFolder(const QString& dir, QString* error) {
  try {
    return classify(folder_images(dir.toStdString(), class_names_of(project_.dataset)), error);
  } catch (const UsageError& e) {
    summary_->setText(QString::fromStdString(e.what()));
    if (error) *error = summary_->text();
    return false;
  }
}

bool TryModelDialog::classify(const std::vector<PredictImage>& images, QString* error) {
  try {
    if (checkpoint_->text().trimmed().isEmpty())
      throw UsageError("choose the checkpoint whose weights classify the images");
    const Checkpoint c = read_checkpoint(checkpoint_->text().trimmed().toStdString());
    showReport(predict_images(project_, c, images, 5));
    return true;
  } catch (const ProjectError& e) {
    summary_->setText(tr("The design cannot classify: %1").arg(QString::fromStdString(e.what())));
  } catch (const UsageError& e) {
    summary_->setText(QString::fromStdString(e.what()));
  }
  if (error) *error = summary_->text();
  return false;
}

void TryModelDialog::showReport(const PredictReport& r) {
  // Misclassified first, then unreadable, then the rest, each in file order.
  std::vector<size_t> order(r.predictions.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto rank = [&](const Prediction& p) {
    if (!p.error.empty()) return 1;
    return p.label >= 0 && p.top.front().index != p.label ? 0 : 2;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rank(r.predictions[a]) < rank(r.predictions[b]);
  });
  table_->setRowCount(static_cast<int>(order.size()));
  int row = 0;
  int64_t unreadable = 0;
  for (size_t i : order) {
    const Prediction& p = r.predictions[i];
    auto* image = new QTableWidgetItem;
    image->setIcon(
        QIcon(QPixmap(QString::fromStdString(p.file)).scaled(48, 48, Qt::KeepAspectRatio)));
    table_->setItem(row, kImage, image);
    table_->setItem(row, kFile,
                    new QTableWidgetItem(QFileInfo(QString::fromStdString(p.file)).fileName()));
    QString top;
    if (!p.error.empty()) {
      top = tr("unreadable: %1").arg(QString::fromStdString(p.error));
      ++unreadable;
    }
    for (const ClassScore& s : p.top)
      top += (top.isEmpty() ? QString() : QStringLiteral("   ")) +
             QStringLiteral("%1 %2%").arg(QString::fromStdString(s.name)).arg(100 * s.p, 0, 'f', 1);
    table_->setItem(row, kTop, new QTableWidgetItem(top));
    const QString truth = p.label >= 0 && p.label < static_cast<int>(r.class_names.size())
                              ? QString::fromStdString(r.class_names[static_cast<size_t>(p.label)])
                              : QString();
    auto* is = new QTableWidgetItem(truth);
    if (rank(p) == 0) is->setForeground(Qt::red);
    table_->setItem(row, kTruth, is);
    table_->setRowHeight(row, 52);
    ++row;
  }
  const auto classified = static_cast<qlonglong>(r.predictions.size()) - unreadable;
  QString text =
      classified == 1 ? tr("1 image classified") : tr("%1 images classified").arg(classified);
  if (r.labelled > 0)
    text += tr("; accuracy %1% (%2 of %3), misclassified first")
                .arg(100.0 * static_cast<double>(r.correct) / static_cast<double>(r.labelled), 0,
                     'f', 2)
                .arg(r.correct)
                .arg(r.labelled);
  if (unreadable > 0) text += tr("; %1 unreadable").arg(unreadable);
  summary_->setText(text);
}

void TryModelDialog::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void TryModelDialog::dropEvent(QDropEvent* event) {
  QStringList files;
  for (const QUrl& u : event->mimeData()->urls()) {
    const QString path = u.toLocalFile();
    if (QFileInfo(path).isDir()) {
      classifyFolder(path);
      return;
    }
    files << path;
  }
  if (!files.isEmpty()) classifyFiles(files);
}

}  // namespace tr::gui

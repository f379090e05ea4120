// SPDX-License-Identifier: GPL-3.0-or-later
#include "dataset/dataset_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QUndoStack>
#include <QVBoxLayout>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include "dataset/sample_grid.h"
#include "project_document.h"
#include "settings/set_training_command.h"

namespace tr::gui {

namespace {

// Everything the samples depend on: the dataset's settings and the seed (not
// the normalisation, which the pixels shown have undone).
QString preview_key(const Project& p, int epoch) {
  const DatasetSpec& d = p.dataset;
  return QStringLiteral("%1|%2|%3|%4x%5x%6|%7|%8|%9|%10|%11|e%12")
      .arg(static_cast<int>(d.kind))
      .arg(QString::fromStdString(d.path), QString::fromStdString(d.val_path))
      .arg(d.height)
      .arg(d.width)
      .arg(d.channels)
      .arg(d.classes)
      .arg(d.random_crop_padding)
      .arg(static_cast<int>(d.random_flip))
      .arg(static_cast<int>(d.skip_bad_images))
      .arg(p.training.seed)
      .arg(epoch);
}

// Six significant digits, as the shipped projects write their figures.
double rounded(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

QString figures(const std::vector<double>& v) {
  QStringList s;
  for (double x : v) s << QString::number(x, 'g', 6);
  return s.join(QStringLiteral(", "));
}

QImage to_image(const DatasetSample& s, int64_t h, int64_t w, int64_t c) {
  QImage img(static_cast<int>(w), static_cast<int>(h),
             c == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
  for (int64_t y = 0; y < h; ++y) {
    uchar* row = img.scanLine(static_cast<int>(y));
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < (c == 1 ? 1 : 3); ++k)
        row[x * (c == 1 ? 1 : 3) + k] =
            s.pixels[static_cast<size_t>((y * w + x) * c + std::min<int64_t>(k, c - 1))];
  }
  return img;
}

}  // namespace

DatasetView::DatasetView(ProjectDocument* doc, QWidget* parent) : QWidget(parent), doc_(doc) {
  source_ = new QLabel(this);
  source_->setObjectName(QStringLiteral("dataSource"));
  source_->setWordWrap(true);
  epoch_ = new QSpinBox(this);
  epoch_->setObjectName(QStringLiteral("dataEpoch"));
  epoch_->setRange(1, 100000);
  epoch_->setPrefix(tr("Epoch "));
  epoch_->setToolTip(
      tr("The epoch whose first training images are shown: each epoch shuffles, "
         "crops and flips anew"));
  stats_ = new QLabel(this);
  stats_->setObjectName(QStringLiteral("dataStatistics"));
  stats_->setWordWrap(true);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  useStats_ = new QPushButton(tr("Normalise with These"), this);
  useStats_->setObjectName(QStringLiteral("useStatistics"));
  useStats_->setToolTip(
      tr("Make the measured mean and standard deviation the project's "
         "normalisation (undoable)"));
  connect(useStats_, &QPushButton::clicked, this, &DatasetView::applyStatistics);

  counts_ = new QTableWidget(0, 3, this);
  counts_->setObjectName(QStringLiteral("classCounts"));
  counts_->setHorizontalHeaderLabels({tr("Class"), tr("Training"), tr("Validation")});
  counts_->verticalHeader()->hide();
  counts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Whole class names and counts: the columns take what their contents
  // need, and the splitter gives the table its width first.
  counts_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  counts_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  counts_->setWordWrap(false);
  grid_ = new SampleGrid;
  grid_->setObjectName(QStringLiteral("sampleGrid"));
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setWidget(grid_);

  auto* top = new QHBoxLayout;
  top->addWidget(source_, 1);
  top->addWidget(epoch_);
  auto* statsRow = new QHBoxLayout;
  statsRow->addWidget(stats_, 1);
  statsRow->addWidget(useStats_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(counts_);
  split->addWidget(scroll);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setCollapsible(0, false);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addLayout(statsRow);
  layout->addWidget(split, 1);

  connect(epoch_, &QSpinBox::valueChanged, this, &DatasetView::reloadIfStale);
  // Settings and other projects change what the data is; the view reloads
  // only while it is shown, or when it is shown next.
  connect(doc_, &ProjectDocument::settingsChanged, this, &DatasetView::reloadIfStale);
  connect(doc_, &ProjectDocument::projectReset, this, &DatasetView::reloadIfStale);
  updateStatistics();
}

DatasetView::~DatasetView() {
  // A load still running never reaches loaded(), which would delete it.
  if (worker_) {
    worker_->wait();
    delete worker_;
  }
}

bool DatasetView::isCurrent() const {
  return !worker_ && shownKey_ == preview_key(doc_->project(), epoch_->value());
}

void DatasetView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  reloadIfStale();
}

void DatasetView::reloadIfStale() {
  updateStatistics();
  if (!isVisible()) return;
  const QString key = preview_key(doc_->project(), epoch_->value());
  if (worker_ ? key == loadingKey_ : key == shownKey_) return;
  if (!worker_) startLoad();  // else the running load starts the next when it ends
}

void DatasetView::startLoad() {
  const Project project = doc_->project();
  const int64_t epoch = epoch_->value() - 1;
  loadingKey_ = preview_key(project, epoch_->value());
  source_->setText(
      tr("Loading %1…").arg(QString::fromUtf8(dataset_kind_info(project.dataset.kind).title)));
  auto result = std::make_shared<Result>();
  result_ = result;
  worker_ = QThread::create([project, epoch, result] {
    try {
      result->preview = preview_dataset(project, kSamples, epoch);
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  connect(worker_, &QThread::finished, this, &DatasetView::loaded);
  worker_->start();
}

void DatasetView::loaded() {
  worker_->deleteLater();
  worker_ = nullptr;
  shownKey_ = loadingKey_;
  preview_ = std::move(result_->preview);
  error_ = result_->error;
  result_.reset();
  const DatasetPreview& p = preview_;
  counts_->setRowCount(0);
  std::vector<SampleGrid::Cell> cells;
  if (!error_.isEmpty()) {
    source_->setText(tr("The dataset does not load: %1").arg(error_));
  } else {
    source_->setText(tr("%1; %2 classes. The first %3 training images of epoch %4, as the "
                        "network sees them:")
                         .arg(QString::fromStdString(p.source))
                         .arg(p.class_names.size())
                         .arg(p.samples.size())
                         .arg(epoch_->value()));
    counts_->setRowCount(static_cast<int>(p.class_names.size()));
    for (size_t c = 0; c < p.class_names.size(); ++c) {
      counts_->setItem(static_cast<int>(c), 0,
                       new QTableWidgetItem(QString::fromStdString(p.class_names[c])));
      for (int col : {1, 2}) {
        const std::vector<int64_t>& n = col == 1 ? p.train_counts : p.val_counts;
        auto* item = new QTableWidgetItem(QString::number(c < n.size() ? n[c] : 0));
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        counts_->setItem(static_cast<int>(c), col, item);
      }
    }
    // The counts arrive after the splitter sized the table: it keeps the
    // width its columns need (and a scroll bar's), not what it had empty.
    counts_->horizontalHeader()->resizeSections(QHeaderView::ResizeToContents);
    counts_->setMinimumWidth(2 * counts_->frameWidth() + counts_->horizontalHeader()->length() +
                             counts_->verticalScrollBar()->sizeHint().width());
    for (const DatasetSample& s : p.samples)
      cells.push_back({to_image(s, p.height, p.width, p.channels),
                       s.label >= 0 && static_cast<size_t>(s.label) < p.class_names.size()
                           ? QString::fromStdString(p.class_names[static_cast<size_t>(s.label)])
                           : QString::number(s.label)});
  }
  grid_->setCells(std::move(cells));
  updateStatistics();
  reloadIfStale();  // the settings may have moved on while it loaded
}

void DatasetView::updateStatistics() {
  const DatasetSpec& d = doc_->project().dataset;
  const bool measured = error_.isEmpty() && !preview_.mean.empty() &&
                        preview_.mean.size() == static_cast<size_t>(d.channels);
  std::vector<double> mean, stdev;
  for (double v : preview_.mean) mean.push_back(rounded(v));
  for (double v : preview_.std) stdev.push_back(rounded(v));
  const bool same = measured && mean == d.mean && stdev == d.std;
  useStats_->setEnabled(measured && !same);
  const QString project =
      tr("the project normalises with mean %1, std %2").arg(figures(d.mean), figures(d.std));
  if (!measured)
    stats_->setText(tr("Pixel statistics appear once the data has loaded; %1.").arg(project));
  else {
    const int64_t images =
        std::accumulate(preview_.train_counts.begin(), preview_.train_counts.end(), int64_t{0});
    const QString measured_images =
        preview_.images_measured < images
            ? tr("%1 of %2 images").arg(preview_.images_measured).arg(images)
            : tr("%1 images").arg(preview_.images_measured);
    stats_->setText(
        tr("Training pixels (/255, %1): mean %2, std %3; %4%5.")
            .arg(measured_images)
            .arg(figures(mean), figures(stdev), project, same ? tr(": the same") : QString()));
  }
}

void DatasetView::applyStatistics() {
  if (!useStats_->isEnabled()) return;
  const ProjectSettings before = doc_->settings();
  ProjectSettings after = before;
  after.dataset.mean.clear();
  after.dataset.std.clear();
  for (double v : preview_.mean) after.dataset.mean.push_back(rounded(v));
  for (double v : preview_.std) after.dataset.std.push_back(rounded(v));
  doc_->undoStack()->push(new SetTrainingCommand(doc_, before, after,
                                                 QStringLiteral("dataset.mean"),
                                                 tr("Normalise with the data's mean and std")));
}

}  // namespace tr::gui

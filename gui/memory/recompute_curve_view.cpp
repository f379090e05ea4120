// SPDX-License-Identifier: GPL-3.0-or-later
#include "recompute_curve_view.h"

#include <QLabel>
#include <QMouseEvent>
#include <QThread>
#include <QVBoxLayout>
#include <cmath>

#include <renaissance/plan_report.h>
#include "plot/curve_plot.h"

namespace tr::gui {

struct RecomputeCurveView::Result {
  std::vector<RecomputePoint> points;
  QString error;
};

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

RecomputeCurveView::RecomputeCurveView(QWidget* parent)
    : QWidget(parent), plot_(new CurvePlot(this)), caption_(new QLabel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  caption_->setWordWrap(true);
  layout->addWidget(caption_);
  layout->addWidget(plot_, 1);
  plot_->xAxis->setLabel(tr("compute added: % of a step's FLOPs"));
  plot_->yAxis->setLabel(tr("plan, MiB per device"));
  plot_->setPointMargins(true);
  plot_->placeLegendBelow();
  plot_->setFollowData(true);
  connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    const int i = pointAt(e->pos());
    if (i < 0) return;
    const double mib = static_cast<double>(points_[static_cast<size_t>(i)].bytes_per_device) / kMiB;
    emit budgetPicked(static_cast<qint64>(std::ceil(mib)));
  });
  caption_->setText(tr("Compile a design to see what recomputation would save."));
}

RecomputeCurveView::~RecomputeCurveView() {
  if (!worker_) return;
  worker_->wait();
  delete worker_;  // its finished() is not delivered to a view being destroyed
}

void RecomputeCurveView::setPlan(std::shared_ptr<const CompiledPlan> cp) {
  cp_ = std::move(cp);
  if (worker_) {
    pending_ = true;
    return;
  }
  start();
}

void RecomputeCurveView::start() {
  points_.clear();
  error_.clear();
  if (!cp_ || cp_->empty()) {
    draw();
    return;
  }
  caption_->setText(tr("Compiling the plan with more and more recomputation…"));
  auto result = std::make_shared<Result>();
  result_ = result;
  const Project design = cp_->design();
  const CompileOptions options = cp_->options();
  worker_ = QThread::create([design, options, result] {
    try {
      result->points = recompute_curve(design, options);
    } catch (const std::exception& e) {
      result->error = QString::fromStdString(e.what());
    }
  });
  connect(worker_, &QThread::finished, this, &RecomputeCurveView::finished);
  worker_->start();
}

void RecomputeCurveView::finished() {
  worker_->deleteLater();
  worker_ = nullptr;
  if (pending_) {
    pending_ = false;
    start();
    return;
  }
  points_ = std::move(result_->points);
  error_ = result_->error;
  result_.reset();
  draw();
}

QString RecomputeCurveView::captionText() const {
  return caption_->text();
}

void RecomputeCurveView::draw() {
  plot_->clearSeries();
  if (!error_.isEmpty()) {
    caption_->setText(tr("The curve could not be computed: %1").arg(error_));
    plot_->requestReplot();
    return;
  }
  if (!cp_ || points_.empty()) {
    plot_->requestReplot();
    return;
  }
  const size_t candidates = cp_->recompute_candidates().size();
  if (candidates == 0) {
    caption_->setText(
        tr("Nothing in this plan can be recomputed: no batch norm feeds only "
           "convolutions, and no convolution feeds only batch norms."));
    plot_->requestReplot();
    return;
  }
  std::vector<double> x, y;
  for (const RecomputePoint& p : points_) {
    x.push_back(100.0 * p.extra_flops_share);
    y.push_back(static_cast<double>(p.bytes_per_device) / kMiB);
  }
  const QPalette pal = palette();
  plot_->addSeries(tr("recomputing the first k of %1").arg(candidates),
                   pal.color(QPalette::Highlight));
  plot_->setSeriesData(0, x, y);
  const double here_x = 100.0 * recompute_flops_share(*cp_);
  const double here_y = static_cast<double>(cp_->bytes_per_device()) / kMiB;
  plot_->addSeries(tr("this plan"), QColor(0x2e, 0x7d, 0x32));
  plot_->setSeriesData(1, {here_x}, {here_y});
  if (const uint64_t budget = cp_->memory_budget(); budget > 0) {
    const double b = static_cast<double>(budget) / kMiB;
    plot_->addSeries(tr("memory budget"), QColor(0xc6, 0x28, 0x28));
    plot_->setSeriesData(2, {x.front(), std::max(x.back(), here_x)}, {b, b});
  }
  plot_->fitToData();
  plot_->requestReplot();
  caption_->setText(
      tr("Each point is the plan recomputing the first k of its %1 candidates in the backward, "
         "the cheapest FLOPs per byte first, as a memory budget takes them: from %2 with none "
         "to %3 with all (+%4% of a step's FLOPs). Click a point to set the memory budget to "
         "its bytes.")
          .arg(candidates)
          .arg(QString::fromStdString(human_bytes(points_.front().bytes_per_device)),
               QString::fromStdString(human_bytes(points_.back().bytes_per_device)))
          .arg(100.0 * points_.back().extra_flops_share, 0, 'f', 1));
}

int RecomputeCurveView::pointAt(QPoint pos) const {
  int best = -1;
  double nearest = 12.0 * 12.0;
  for (size_t i = 0; i < points_.size(); ++i) {
    const double px = plot_->xAxis->coordToPixel(100.0 * points_[i].extra_flops_share);
    const double py =
        plot_->yAxis->coordToPixel(static_cast<double>(points_[i].bytes_per_device) / kMiB);
    const double d = (px - pos.x()) * (px - pos.x()) + (py - pos.y()) * (py - pos.y());
    if (d <= nearest) {
      nearest = d;
      best = static_cast<int>(i);
    }
  }
  return best;
}

}  // namespace tr::gui

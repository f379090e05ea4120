// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/training_charts.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "plot/curve_plot.h"

namespace tr::gui {

namespace {

constexpr int kMinFlushMs = 30;
constexpr double kDefaultSmoothing = 0.6;

CurvePlot* make_plot(const QString& title, const QString& x_label, const QString& y_label,
                     QWidget* parent) {
  auto* plot = new CurvePlot(parent);
  plot->setMinimumSize(220, 140);  // four fit beside the docks at 1280x800
  plot->setTitle(title);
  plot->xAxis->setLabel(x_label);
  plot->yAxis->setLabel(y_label);
  return plot;
}

// appendPoint fits the axes to all the data each time it follows new
// points; over a batch, fitting once (at its last point) is enough.
void append(CurvePlot* plot, int series, const std::vector<double>& x,
            const std::vector<double>& y) {
  if (x.empty()) return;
  plot->setFollowData(false);
  for (size_t i = 0; i + 1 < x.size(); ++i) plot->appendPoint(series, x[i], y[i]);
  plot->setFollowData(true);
  plot->appendPoint(series, x.back(), y.back());
}

}  // namespace

TrainingCharts::TrainingCharts(QWidget* parent) : QWidget(parent) {
  loss_ = make_plot(tr("Loss"), tr("step"), tr("loss"), this);
  top1_ = make_plot(tr("Top-1 accuracy"), tr("epoch"), tr("top-1 (%)"), this);
  lr_ = make_plot(tr("Learning rate"), tr("step"), tr("learning rate"), this);
  throughput_ = make_plot(tr("Throughput"), tr("step"), tr("images/s"), this);
  loss_->setObjectName(QStringLiteral("lossPlot"));
  top1_->setObjectName(QStringLiteral("top1Plot"));
  lr_->setObjectName(QStringLiteral("lrPlot"));
  throughput_->setObjectName(QStringLiteral("throughputPlot"));
  top1_->setIntegerXTicks(true);
  top1_->setPointMargins(true);
  for (CurvePlot* p : {loss_, top1_, lr_, throughput_}) p->placeLegendBelow();

  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setObjectName(QStringLiteral("smoothing"));
  slider_->setRange(0, 99);
  slider_->setToolTip(
      tr("Exponential smoothing of the loss and images/s curves, debiased so "
         "the first steps are not pulled towards zero"));
  sliderValue_ = new QLabel(this);
  sliderValue_->setMinimumWidth(
      sliderValue_->fontMetrics().horizontalAdvance(QStringLiteral("0.99")));
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    const double w = v / 100.0;
    sliderValue_->setText(QString::number(w, 'f', 2));
    loss_->setSmoothing(w);
    throughput_->setSmoothing(w);
  });

  auto* smoothing = new QHBoxLayout;
  smoothing->addWidget(new QLabel(tr("Smoothing"), this));
  smoothing->addWidget(slider_, 1);
  smoothing->addWidget(sliderValue_);
  auto* grid = new QGridLayout;
  grid->addWidget(loss_, 0, 0);
  grid->addWidget(top1_, 0, 1);
  grid->addWidget(lr_, 1, 0);
  grid->addWidget(throughput_, 1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(smoothing);
  layout->addLayout(grid, 1);

  flushTimer_ = new QTimer(this);
  flushTimer_->setSingleShot(true);
  connect(flushTimer_, &QTimer::timeout, this, &TrainingCharts::flush);
  sinceFlush_.start();

  addSeries();
  slider_->setValue(static_cast<int>(std::lround(kDefaultSmoothing * 100)));
}

void TrainingCharts::addSeries() {
  loss_->addSeries(tr("loss"), QColor(0x1f, 0x77, 0xb4), true);
  top1_->addSeries(tr("train top-1"), QColor(0x1f, 0x77, 0xb4));
  top1_->addSeries(tr("val top-1"), QColor(0xd6, 0x27, 0x28));
  lr_->addSeries(tr("learning rate"), QColor(0x2c, 0xa0, 0x2c));
  throughput_->addSeries(tr("images/s"), QColor(0x94, 0x67, 0xbd), true);
  loss_->setSmoothing(smoothing());
  throughput_->setSmoothing(smoothing());
}

void TrainingCharts::clear() {
  flushTimer_->stop();
  pending_.clear();
  for (CurvePlot* p : {loss_, top1_, lr_, throughput_}) p->clearSeries();
  addSeries();
}

void TrainingCharts::setSmoothing(double weight) {
  slider_->setValue(static_cast<int>(std::lround(std::clamp(weight, 0.0, 0.99) * 100)));
}

double TrainingCharts::smoothing() const {
  return slider_->value() / 100.0;
}

void TrainingCharts::addSteps(const std::vector<StepSample>& steps) {
  pending_.insert(pending_.end(), steps.begin(), steps.end());
  scheduleFlush();
}

void TrainingCharts::scheduleFlush() {
  if (flushTimer_->isActive()) return;
  // A redraw of long curves costs more: leave the event loop at least three
  // quarters of the time for everything else.
  double replot_ms = 0;
  for (CurvePlot* p : {loss_, lr_, throughput_}) replot_ms += p->replotTime(true);
  const auto gap = std::max<qint64>(kMinFlushMs, static_cast<qint64>(4 * replot_ms));
  flushTimer_->start(static_cast<int>(std::max<qint64>(0, gap - sinceFlush_.elapsed())));
}

void TrainingCharts::flush() {
  flushTimer_->stop();
  sinceFlush_.restart();
  if (pending_.empty()) return;
  const size_t n = pending_.size();
  std::vector<double> x(n), loss(n), lr(n), ips(n);
  for (size_t i = 0; i < n; ++i) {
    const StepSample& s = pending_[i];
    x[i] = static_cast<double>(s.step);
    loss[i] = s.loss;
    lr[i] = s.lr;
    ips[i] = s.images_per_s;
  }
  pending_.clear();
  append(loss_, 0, x, loss);
  append(lr_, 0, x, lr);
  append(throughput_, 0, x, ips);
}

void TrainingCharts::addEpoch(const EpochReport& e) {
  flush();  // the epoch's steps first
  // An epoch ends at its last step: a run stopped partway through an epoch
  // plots that epoch where it stopped, not as a whole one.
  double x = static_cast<double>(e.epoch + 1);
  if (!e.complete() && e.batches > 0)
    x = static_cast<double>(e.epoch) +
        static_cast<double>(e.steps) / static_cast<double>(e.batches);
  top1_->appendPoint(0, x, 100 * e.train_top1);
  if (e.validated) top1_->appendPoint(1, x, 100 * e.val_top1);
}

}  // namespace tr::gui

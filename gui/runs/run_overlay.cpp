// SPDX-License-Identifier: GPL-3.0-or-later
// The overlay of several runs' curves.
#include "runs/run_overlay.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "plot/curve_plot.h"

namespace tr::gui {

namespace {

// A run keeps its colour whichever runs are selected with it.
QColor run_color(int64_t id) {
  static const QColor palette[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                                   QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                                   QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                   QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                                   QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  constexpr int64_t n = sizeof palette / sizeof palette[0];
  return palette[((id % n) + n) % n];
}

}  // namespace

RunOverlay::RunOverlay(QWidget* parent)
    : QWidget(parent),
      metric_(new QComboBox(this)),
      axis_(new QComboBox(this)),
      smoothing_(new QDoubleSpinBox(this)),
      hint_(new QLabel(this)),
      plot_(new CurvePlot(this)) {
  metric_->setObjectName(QStringLiteral("runsMetric"));
  for (const CurveMetric& m : curve_metrics())
    metric_->addItem(m.label, QString::fromStdString(m.key));
  axis_->setObjectName(QStringLiteral("runsAxis"));
  axis_->addItem(tr("Step"), static_cast<int>(CurveAxis::Step));
  axis_->addItem(tr("Epoch"), static_cast<int>(CurveAxis::Epoch));
  axis_->addItem(tr("Wall time"), static_cast<int>(CurveAxis::WallTime));
  axis_->setToolTip(
      tr("Wall time since the run started. Steps carry no time of their own: each is placed "
         "from its throughput (global batch / images per second), re-anchored at every epoch "
         "end the run recorded."));
  smoothing_->setRange(0, 0.99);
  smoothing_->setSingleStep(0.05);
  smoothing_->setDecimals(2);
  smoothing_->setToolTip(tr("Smoothing of per-step curves (debiased moving average)"));
  hint_->setObjectName(QStringLiteral("runsOverlayHint"));
  plot_->setObjectName(QStringLiteral("runsPlot"));
  plot_->setMinimumSize(320, 200);
  // Under the plot, wrapping into rows as runs are added, so no curve hides behind it.
  plot_->placeLegendBelow();
  plot_->showLegend(true);

  // Two rows: beside Details and Compare at 1280 pixels, one row of
  // choosers took the width the configuration's names needed.
  auto* choosers = new QGridLayout;
  choosers->addWidget(new QLabel(tr("Metric"), this), 0, 0);
  choosers->addWidget(metric_, 0, 1, 1, 3);
  choosers->addWidget(new QLabel(tr("x axis"), this), 1, 0);
  choosers->addWidget(axis_, 1, 1);
  choosers->addWidget(new QLabel(tr("Smoothing"), this), 1, 2, Qt::AlignRight);
  choosers->addWidget(smoothing_, 1, 3);
  choosers->setColumnStretch(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(choosers);
  layout->addWidget(hint_);
  layout->addWidget(plot_, 1);

  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    redraw();
    emit metricChanged(QString::fromStdString(metric()));
  });
  connect(axis_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
  connect(smoothing_, &QDoubleSpinBox::valueChanged, plot_, &CurvePlot::setSmoothing);
  redraw();
}

void RunOverlay::setRuns(std::vector<Run> runs) {
  runs_ = std::move(runs);
  redraw();
}

std::string RunOverlay::metric() const {
  return metric_->currentData().toString().toStdString();
}

void RunOverlay::setMetric(const std::string& key) {
  const int i = metric_->findData(QString::fromStdString(key));
  if (i >= 0) metric_->setCurrentIndex(i);
}

CurveAxis RunOverlay::axis() const {
  return static_cast<CurveAxis>(axis_->currentData().toInt());
}

void RunOverlay::setAxis(CurveAxis axis) {
  const int i = axis_->findData(static_cast<int>(axis));
  if (i >= 0) axis_->setCurrentIndex(i);
}

void RunOverlay::redraw() {
  plot_->clearSeries();
  const CurveMetric* m = find_curve_metric(metric());
  if (!m) return;
  plot_->setPointMargins(!m->perStep);  // one marked point per epoch
  const CurveAxis x = axis();
  size_t without = 0;
  for (const Run& r : runs_) {
    const int s = plot_->addSeries(r.label, run_color(r.curves->id), m->perStep);
    CurveSeries c = curve_series(*r.curves, *m, x);
    if (c.x.empty()) ++without;
    plot_->setSeriesData(s, std::move(c.x), std::move(c.y));
  }
  plot_->showLegend(!runs_.empty());
  if (x == CurveAxis::WallTime) {
    auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
    ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
    plot_->xAxis->setTicker(ticker);
    plot_->xAxis->setLabel(tr("Wall time since start (h:mm:ss)"));
    plot_->xAxis->setSubTicks(true);
  } else {
    // Epochs and steps are counted whole: a tick at 1.5 epochs or 2.5 steps names none.
    plot_->setIntegerXTicks(true);
    plot_->xAxis->setLabel(x == CurveAxis::Step ? tr("Step") : tr("Epoch"));
  }
  plot_->yAxis->setLabel(m->label);
  plot_->fitToData();
  if (runs_.empty())
    hint_->setText(tr("Select runs in the table to overlay their curves."));
  else if (without > 0)
    hint_->setText(tr("%1 of the selected runs recorded no %2.").arg(without).arg(m->label));
  else
    hint_->clear();
  hint_->setVisible(!hint_->text().isEmpty());
}

}  // namespace tr::gui

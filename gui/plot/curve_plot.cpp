// SPDX-License-Identifier: GPL-3.0-or-later
#include "plot/curve_plot.h"

#include <QFontMetrics>
#include <algorithm>
#include <cmath>
#include <limits>

#include "plot/pixel_decimation.h"

namespace tr::gui {

namespace {

constexpr size_t kMarkedPoints = 12;
// Half a marked point's disc, its pen and a pixel to spare.
constexpr double kPointRadius = 5;

}  // namespace

CurvePlot::CurvePlot(QWidget* parent) : QCustomPlot(parent) {
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
  axisRect()->setRangeZoom(Qt::Horizontal);
  legend->setVisible(false);
  setNoAntialiasingOnDrag(true);
  // The per-pixel min/max zigzag drawn as one wide polyline costs ~100 ms at
  // a million points; fast polylines draw it in a tenth of that.
  setPlottingHint(QCP::phFastPolylines, true);
  connect(this, &QCustomPlot::beforeReplot, this, &CurvePlot::decimateForReplot);
  applyPalette();
  // A drag or wheel on the plot means the user wants to look somewhere: stop following.
  connect(this, &QCustomPlot::mousePress, this, [this] { userMovedAxis_ = true; });
  connect(this, &QCustomPlot::mouseWheel, this, [this] { userMovedAxis_ = true; });
  connect(this, &QCustomPlot::mouseDoubleClick, this, [this] {
    userMovedAxis_ = false;
    fitToData();
  });
}

int CurvePlot::addSeries(const QString& name, const QColor& color, bool smoothable) {
  Series s;
  s.name = name;
  s.smoothable = smoothable;
  s.smoother.setWeight(smoothing_);
  s.raw = addGraph();
  s.raw->setName(name);
  s.raw->setAdaptiveSampling(false);  // decimated here, per pixel column
  s.raw->setPen(QPen(color, 1.5));
  if (smoothable) {
    s.smoothed = addGraph();
    s.smoothed->setName(name + tr(" (smoothed)"));
    s.smoothed->setAdaptiveSampling(false);
    s.smoothed->setPen(QPen(color, 2));
  }
  series_.push_back(std::move(s));
  restyle(series_.back());
  showLegend(series_.size() > 1);
  requestReplot();
  return static_cast<int>(series_.size()) - 1;
}

void CurvePlot::clearSeries() {
  clearGraphs();
  series_.clear();
  userMovedAxis_ = false;
  // The next data, or none, is not drawn in the last run's ranges.
  xAxis->setRange(0, 1);
  yAxis->setRange(0, 1);
  requestReplot();
}

void CurvePlot::setTitle(const QString& title) {
  plotLayout()->insertRow(0);
  auto* element = new QCPTextElement(this, title, QFont(QString(), 10, QFont::Bold));
  element->setTextColor(palette().color(QPalette::Text));
  plotLayout()->addElement(0, 0, element);
}

void CurvePlot::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange)
    applyPalette();
}

void CurvePlot::applyPalette() {
  const QPalette pal = palette();
  const QColor base = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
  QColor grid = text;
  grid.setAlphaF(0.18);
  QColor sub = text;
  sub.setAlphaF(0.08);
  setBackground(base);
  for (QCPAxis* axis : {xAxis, yAxis, xAxis2, yAxis2}) {
    axis->setBasePen(QPen(text, 1));
    axis->setTickPen(QPen(text, 1));
    axis->setSubTickPen(QPen(text, 1));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
    axis->grid()->setSubGridPen(QPen(sub, 1, Qt::DotLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
  }
  legend->setBrush(base);
  legend->setTextColor(text);
  legend->setBorderPen(legend->layout() == plotLayout() ? QPen(Qt::NoPen) : QPen(grid));
  for (int i = 0; i < plotLayout()->elementCount(); ++i)
    if (auto* title = qobject_cast<QCPTextElement*>(plotLayout()->elementAt(i)))
      title->setTextColor(text);
  requestReplot();
}

void CurvePlot::setIntegerXTicks(bool integer) {
  integerTicks_ = integer;
  if (!integer) {
    xAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    return;
  }
  auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
  ticker->setTickStep(1.0);
  ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  xAxis->setTicker(ticker);
  xAxis->setSubTicks(false);
}

void CurvePlot::placeLegendBelow() {
  if (legend->layout() == plotLayout()) return;
  axisRect()->insetLayout()->take(legend);
  plotLayout()->addElement(plotLayout()->rowCount(), 0, legend);
  plotLayout()->setRowStretchFactor(plotLayout()->rowCount() - 1, 0.001);
  legend->setFillOrder(QCPLegend::foColumnsFirst);
  legend->setWrap(3);
  legend->setBorderPen(Qt::NoPen);
  showLegend(legend->visible());
}

void CurvePlot::showLegend(bool show) {
  legend->setVisible(show);
  // A layout keeps a row for a hidden element: below the plot, the hidden
  // legend's row is closed, so a plot of one series keeps the height.
  if (legend->layout() != plotLayout()) return;
  legend->setMaximumSize(QWIDGETSIZE_MAX, show ? QWIDGETSIZE_MAX : 0);
  legend->setMargins(show ? QMargins(7, 5, 7, 4) : QMargins());
  requestReplot();
}

void CurvePlot::setSeriesData(int series, std::vector<double> x, std::vector<double> y) {
  Series& s = series_.at(series);
  y.resize(x.size(), std::numeric_limits<double>::quiet_NaN());
  s.x = std::move(x);
  s.y = std::move(y);
  if (s.smoothable) {
    s.smoother.reset();
    s.smooth.clear();
    s.smooth.reserve(s.y.size());
    for (double v : s.y) s.smooth.push_back(s.smoother.push(v));
  }
  followIfAsked();
  requestReplot();
}

void CurvePlot::appendPoint(int series, double x, double y) {
  Series& s = series_.at(series);
  s.x.push_back(x);
  s.y.push_back(y);
  if (s.smoothable) s.smooth.push_back(s.smoother.push(y));
  followIfAsked();
  requestReplot();
}

void CurvePlot::setSmoothing(double weight) {
  smoothing_ = weight;
  for (Series& s : series_) {
    if (!s.smoothable) continue;
    s.smoother.setWeight(weight);
    s.smooth.clear();
    s.smooth.reserve(s.y.size());
    for (double v : s.y) s.smooth.push_back(s.smoother.push(v));
    restyle(s);
  }
  requestReplot();
}

void CurvePlot::restyle(Series& s) {
  if (!s.smoothed) return;
  const bool smoothing = smoothing_ > 0;
  QColor faint = s.smoothed->pen().color();
  if (smoothing) faint.setAlpha(60);
  s.raw->setPen(QPen(faint, smoothing ? 1 : 1.5));
  s.smoothed->setVisible(smoothing);
  s.smoothed->removeFromLegend();
  if (smoothing) s.smoothed->addToLegend();
}

void CurvePlot::fitToData() {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series_) {
    if (s.x.empty()) continue;
    x_lo = std::min(x_lo, s.x.front());
    x_hi = std::max(x_hi, s.x.back());
    for (double v : s.y)
      if (std::isfinite(v)) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
  }
  if (!std::isfinite(x_lo)) return;
  // One point (one epoch) sits in the middle, not on the plot's edge.
  const double last_x = x_hi;
  if (x_hi <= x_lo) x_lo -= 0.5, x_hi = x_lo + 1;
  if (pointMargins_) {
    const double margin = std::max(0.1, 0.03 * (x_hi - x_lo));
    x_lo -= margin;
    x_hi += margin;
    if (integerTicks_) x_hi = std::max(x_hi, std::ceil(last_x));
  }
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;
  double pad = y_hi > y_lo ? 0.05 * (y_hi - y_lo) : 0.5;
  if (pointMargins_ && y_hi > y_lo) {
    // A marked point is a disc: 5% of a short plot (the Top-1 chart at
    // 1280x800 is 30 px tall) is less than its radius, and the highest and
    // lowest would be cut in half by the axis.
    updateLayout();  // the axis rect of the current size, not of the last replot
    const int tall = axisRect()->height() > 0 ? axisRect()->height() : height() / 2;
    const double room = std::max(1.0, tall - 2.0 * kPointRadius);
    pad = std::max(pad, (y_hi - y_lo) * kPointRadius / room);
  }
  xAxis->setRange(x_lo, x_hi);
  yAxis->setRange(y_lo - pad, y_hi + pad);
  requestReplot();
}

void CurvePlot::resizeEvent(QResizeEvent* event) {
  QCustomPlot::resizeEvent(event);
  if (pointMargins_) followIfAsked();
}

void CurvePlot::followIfAsked() {
  if (follow_ && !userMovedAxis_) fitToData();
}

void CurvePlot::requestReplot() {
  replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::decimateForReplot() {
  // As many value ticks as the axis has room for, two label heights apart:
  // a short plot (four share a view at 1280x800) must not stack its labels.
  const int line = QFontMetrics(yAxis->tickLabelFont()).height();
  const int tall = axisRect()->height() > 0 ? axisRect()->height() : height() - 4 * line;
  yAxis->ticker()->setTickStepStrategy(QCPAxisTicker::tssMeetTickCount);
  // Squeezed to a few lines' height (a tall dock below), one or two labels.
  yAxis->ticker()->setTickCount(std::clamp(tall / (2 * line), 1, 5));
  const QCPRange range = xAxis->range();
  // The axis rect is laid out during the replot, after this; before the
  // first one it may not know its size yet. The widget's width bounds it.
  const int columns = std::max({1, axisRect()->width(), width()});
  for (Series& s : series_) {
    const DecimatedCurve raw = decimate_per_pixel(s.x, s.y, range.lower, range.upper, columns);
    s.raw->setData(QVector<double>(raw.x.begin(), raw.x.end()),
                   QVector<double>(raw.y.begin(), raw.y.end()), true);
    // A line needs two points: below a few dozen in view, mark each one.
    s.raw->setScatterStyle(raw.x.size() <= kMarkedPoints
                               ? QCPScatterStyle(QCPScatterStyle::ssDisc, 6)
                               : QCPScatterStyle(QCPScatterStyle::ssNone));
    if (s.smoothed && s.smoothed->visible()) {
      const DecimatedCurve sm =
          decimate_per_pixel(s.x, s.smooth, range.lower, range.upper, columns);
      s.smoothed->setData(QVector<double>(sm.x.begin(), sm.x.end()),
                          QVector<double>(sm.y.begin(), sm.y.end()), true);
    }
  }
}

size_t CurvePlot::drawnPointCount() const {
  size_t n = 0;
  for (const Series& s : series_) {
    n += static_cast<size_t>(s.raw->dataCount());
    if (s.smoothed && s.smoothed->visible()) n += static_cast<size_t>(s.smoothed->dataCount());
  }
  return n;
}

}  // namespace tr::gui

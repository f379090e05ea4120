// SPDX-License-Identifier: GPL-3.0-or-later
// CurvePlot: a QCustomPlot that keeps every series at full resolution and
// hands the graphs only what the current pixel width can show (min/max per
// pixel column), recomputed just before each replot. A series may be drawn
// smoothed (debiased EMA) over its faint raw curve. Points can be appended
// live; redraws are queued, so a burst of points costs one replot. A series
// with few points in view gets markers, so a single point still shows.
#pragma once

#include <qcustomplot.h>
#include <QColor>
#include <QString>
#include <vector>

#include "plot/debiased_smoothing.h"

namespace tr::gui {

class CurvePlot : public QCustomPlot {
  Q_OBJECT

 public:
  explicit CurvePlot(QWidget* parent = nullptr);

  // Returns the series index. `smoothable` series follow setSmoothing.
  int addSeries(const QString& name, const QColor& color, bool smoothable = false);
  void clearSeries();
  int seriesCount() const { return static_cast<int>(series_.size()); }
  // x must ascend within a series.
  void setSeriesData(int series, std::vector<double> x, std::vector<double> y);
  void appendPoint(int series, double x, double y);
  size_t pointCount(int series) const { return series_.at(series).x.size(); }
  const std::vector<double>& seriesX(int series) const { return series_.at(series).x; }
  const std::vector<double>& seriesY(int series) const { return series_.at(series).y; }

  // 0 draws raw curves only; (0, 1) draws the smoothed curve over a faint raw one.
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  // The smoothed values of a smoothable series (same length as its data).
  const std::vector<double>& smoothedY(int series) const { return series_.at(series).smooth; }

  // A bold title in a row above the plot, coloured by the palette.
  void setTitle(const QString& title);
  // Whole numbers only on the x axis (epochs): no tick at 1.5 epochs.
  void setIntegerXTicks(bool integer);
  // For plots of a few marked points (one per epoch): the x axis leaves room
  // around the first and last, so no marker is cut by the plot's edge, and
  // with whole-number ticks reaches the next whole number past the last
  // point, so an epoch cut short sits between its ticks; the value axis
  // leaves a marker's radius in pixels above and below, however short the
  // plot (refitted when it is resized).
  void setPointMargins(bool on) { pointMargins_ = on; }
  // The legend in a row under the plot instead of over the data.
  void placeLegendBelow();
  // Shows or hides the legend (a hidden one below the plot takes no room).
  void showLegend(bool show);
  // Keeps the x axis following new points (until the user zooms or pans).
  void setFollowData(bool follow) { follow_ = follow; }
  // Fits both axes to all data.
  void fitToData();
  // Points the graphs were given in the last replot, over all series (for
  // tests and the benchmark: never more than a few per pixel column).
  size_t drawnPointCount() const;
  // Queues a replot (coalesced with others in the same event-loop pass).
  void requestReplot();

 protected:
  // A theme change (light, dark) recolours the axes, grid, text and legend.
  void changeEvent(QEvent* event) override;
  // Point margins are in pixels: a new size refits a plot that follows its data.
  void resizeEvent(QResizeEvent* event) override;

 private:
  void applyPalette();
  struct Series {
    QString name;
    bool smoothable = false;
    std::vector<double> x, y, smooth;
    DebiasedSmoothing smoother;
    QCPGraph* raw = nullptr;
    QCPGraph* smoothed = nullptr;  // null unless smoothable
  };
  void decimateForReplot();
  void restyle(Series& s);
  void followIfAsked();

  std::vector<Series> series_;
  double smoothing_ = 0;
  bool follow_ = true;
  bool userMovedAxis_ = false;
  bool integerTicks_ = false;
  bool pointMargins_ = false;
};

}  // namespace tr::gui

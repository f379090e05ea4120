// SPDX-License-Identifier: GPL-3.0-or-later
// The curve plot's pieces: debiased smoothing against hand-computed values,
// per-pixel min/max decimation that keeps every spike, and the plot widget
// drawing a million points through a few per pixel column.
#include <QtTest>
#include <cmath>
#include <vector>

#include "plot/curve_plot.h"
#include "plot/debiased_smoothing.h"
#include "plot/pixel_decimation.h"

using namespace tr::gui;

class TestPlot : public QObject {
  Q_OBJECT

 private slots:
  void smoothingIsDebiased() {
    // The first smoothed value is the first raw value (no pull towards 0).
    const std::vector<double> v = DebiasedSmoothing::apply({2.0, 4.0, 4.0}, 0.5);
    QCOMPARE(v.size(), size_t{3});
    QCOMPARE(v[0], 2.0);
    // avg1 = 1, avg2 = 0.5 + 2 = 2.5, debiased by 1 - 0.25: 10/3.
    QVERIFY(std::abs(v[1] - 10.0 / 3.0) < 1e-12);
    // A constant curve stays constant whatever the weight.
    for (double w : {0.0, 0.6, 0.99})
      for (double s : DebiasedSmoothing::apply(std::vector<double>(50, 1.25), w))
        QVERIFY(std::abs(s - 1.25) < 1e-12);
  }

  void smoothingSkipsNonFinite() {
    DebiasedSmoothing s(0.9);
    QCOMPARE(s.push(1.0), 1.0);
    QVERIFY(std::isnan(s.push(std::nan(""))));
    QVERIFY(std::abs(s.push(1.0) - 1.0) < 1e-12);
  }

  void decimationKeepsExtremesOfEveryColumn() {
    const size_t n = 1'000'000;
    std::vector<double> x(n), y(n);
    for (size_t i = 0; i < n; ++i) {
      x[i] = static_cast<double>(i);
      y[i] = std::sin(static_cast<double>(i) * 1e-4);
    }
    y[123'457] = 50;  // one-point spikes must survive
    y[654'321] = -50;
    const DecimatedCurve d = decimate_per_pixel(x, y, 0, static_cast<double>(n - 1), 800);
    QVERIFY(d.x.size() <= 4 * 800 + 2);
    QVERIFY(d.x.size() >= 800);
    QVERIFY(std::find(d.y.begin(), d.y.end(), 50.0) != d.y.end());
    QVERIFY(std::find(d.y.begin(), d.y.end(), -50.0) != d.y.end());
    QVERIFY(std::is_sorted(d.x.begin(), d.x.end()));
    QCOMPARE(d.x.front(), 0.0);
    QCOMPARE(d.x.back(), static_cast<double>(n - 1));
  }

  void decimationOfAZoomedRangeRunsToTheEdges() {
    std::vector<double> x, y;
    for (int i = 0; i < 100'000; ++i) x.push_back(i), y.push_back(i % 7);
    const DecimatedCurve d = decimate_per_pixel(x, y, 500.5, 90'000.5, 100);
    QCOMPARE(d.x.front(), 500.0);  // the point just left of the range
    QCOMPARE(d.x.back(), 90'001.0);
    // Every column holds both 0 and 6.
    QCOMPARE(*std::min_element(d.y.begin() + 1, d.y.end() - 1), 0.0);
    QCOMPARE(*std::max_element(d.y.begin() + 1, d.y.end() - 1), 6.0);
  }

  void shortCurvesAreNotReduced() {
    const std::vector<double> x = {0, 1, 2, 3}, y = {3, 1, 4, 1};
    const DecimatedCurve d = decimate_per_pixel(x, y, 0, 3, 500);
    QCOMPARE(d.x, x);
    QCOMPARE(d.y, y);
  }

  void plotDrawsAMillionPointsThroughPixelColumns() {
    CurvePlot plot;
    plot.resize(900, 400);
    const int loss = plot.addSeries(QStringLiteral("loss"), Qt::blue, true);
    std::vector<double> x(1'000'000), y(1'000'000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i), y[i] = 1.0 / (1 + i);
    plot.setSeriesData(loss, x, y);
    plot.replot();
    QCOMPARE(plot.pointCount(loss), size_t{1'000'000});
    const size_t columns = static_cast<size_t>(plot.width());
    const size_t raw_drawn = plot.drawnPointCount();
    QVERIFY(raw_drawn >= columns / 2);
    QVERIFY2(plot.drawnPointCount() <= 4 * columns + 2,
             qPrintable(QString::number(plot.drawnPointCount())));
    // Smoothing on: the smoothed curve is drawn too, still per column.
    plot.setSmoothing(0.9);
    plot.replot();
    QCOMPARE(plot.smoothedY(loss).size(), size_t{1'000'000});
    QVERIFY(plot.drawnPointCount() > raw_drawn);
    QVERIFY(plot.drawnPointCount() <= 2 * (4 * columns + 2));
    // Zoomed in to 100 steps, every point is drawn.
    plot.xAxis->setRange(1000, 1099);
    plot.replot();
    QVERIFY(plot.drawnPointCount() >= 2 * 100);
  }

  void appendedPointsFollowTheAxis() {
    CurvePlot plot;
    plot.resize(600, 300);
    const int s = plot.addSeries(QStringLiteral("top-1"), Qt::red);
    for (int i = 0; i < 10; ++i) plot.appendPoint(s, i, 0.1 * i);
    plot.replot();
    QCOMPARE(plot.xAxis->range().lower, 0.0);
    QCOMPARE(plot.xAxis->range().upper, 9.0);
    QVERIFY(plot.yAxis->range().contains(0.9));
    QCOMPARE(plot.drawnPointCount(), size_t{10});
  }

  // One validated epoch is one point: it is marked (a line needs two) and
  // sits in the middle of the plot, not on its edge.
  void aSinglePointShowsInTheMiddle() {
    CurvePlot plot;
    plot.resize(600, 300);
    const int s = plot.addSeries(QStringLiteral("val top-1"), Qt::red);
    plot.appendPoint(s, 1, 88.5);
    plot.replot();
    QVERIFY(plot.graph(0)->scatterStyle().shape() != QCPScatterStyle::ssNone);
    QCOMPARE(plot.xAxis->range().center(), 1.0);
    QVERIFY(plot.yAxis->range().contains(88.5));
    // A long curve is drawn as a line only.
    for (int i = 2; i < 200; ++i) plot.appendPoint(s, i, 88);
    plot.replot();
    QCOMPARE(plot.graph(0)->scatterStyle().shape(), QCPScatterStyle::ssNone);
  }

  // A new run does not start in the last one's ranges.
  void clearingForgetsTheRanges() {
    CurvePlot plot;
    plot.resize(600, 300);
    const int s = plot.addSeries(QStringLiteral("loss"), Qt::blue);
    for (int i = 0; i < 1000; ++i) plot.appendPoint(s, i, 50 + i);
    plot.replot();
    plot.clearSeries();
    QCOMPARE(plot.xAxis->range().upper, 1.0);
    QCOMPARE(plot.yAxis->range().upper, 1.0);
  }

  void epochTicksAreWholeNumbersAndTheLegendIsBelow() {
    CurvePlot plot;
    plot.resize(600, 300);
    plot.setIntegerXTicks(true);
    plot.placeLegendBelow();
    plot.addSeries(QStringLiteral("train"), Qt::blue);
    plot.addSeries(QStringLiteral("val"), Qt::red);
    plot.appendPoint(0, 0.25, 1);
    plot.appendPoint(0, 2.5, 3);
    plot.replot();
    QVector<double> ticks;
    QVector<QString> labels;
    plot.xAxis->ticker()->generate(plot.xAxis->range(), QLocale::c(), 'g', 6, ticks, nullptr,
                                   &labels);
    QVERIFY(!ticks.isEmpty());
    for (double t : ticks) QCOMPARE(t, std::round(t));
    QVERIFY(plot.legend->visible());
    QVERIFY(plot.legend->outerRect().top() >= plot.axisRect()->outerRect().bottom());
  }
};

QTEST_MAIN(TestPlot)
#include "test_plot.moc"

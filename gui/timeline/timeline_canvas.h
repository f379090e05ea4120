// SPDX-License-Identifier: GPL-3.0-or-later
// TimelineCanvas: the painted lanes of a TimelineModel under a time axis.
// Only bars inside the visible time range are visited, and bars narrower than
// a pixel merge into one mark, so tens of thousands of spans stay fluid. The
// wheel zooms around the cursor, dragging pans, hovering describes a bar and
// clicking one reports it.
#pragma once

#include <QPoint>
#include <QRectF>
#include <QWidget>
#include <vector>

namespace tr::gui {

class TimelineModel;

class TimelineCanvas : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineCanvas(QWidget* parent = nullptr);

  // `model` must outlive its use here; null clears. Shows the whole profile.
  void setModel(const TimelineModel* model);
  const TimelineModel* model() const { return model_; }

  // Bars of these model layers drawn in full colour and outlined, every other
  // bar dimmed; an empty list draws all bars alike.
  void setHighlightedLayers(const std::vector<int>& layers);
  bool highlighting() const { return highlighting_; }
  bool isDimmed(int bar) const;
  QColor barColor(int bar) const;

  // The visible time range, in µs since the earliest span.
  double visibleStart() const { return t0_; }
  double visibleEnd() const { return t1_; }
  void setVisibleRange(double t0_us, double t1_us);
  void fit();
  // Scales the visible span by `factor` (< 1 zooms in) keeping the time at
  // widget x-coordinate `x` where it is.
  void zoomAt(double x, double factor);
  void panByPixels(double dx);

  QRect plotRect() const;  // where bars are drawn: right of the lane names, under the axis
  double xAt(double t_us) const;
  double timeAt(double x) const;
  QRectF laneRect(int lane) const;  // the lane across the plot; empty when out of range
  QRectF barRect(int bar) const;    // unclipped
  int laneAt(QPoint p) const;       // -1 when none
  int barAt(QPoint p) const;        // -1 when none (a couple of pixels of slack)
  QString describeAt(QPoint p) const;
  int hoveredBar() const { return hovered_; }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void barClicked(int bar);
  void hovered(const QString& text);  // empty when the cursor leaves the bars
  void visibleRangeChanged(double t0_us, double t1_us);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  int labelWidth() const;
  int axisHeight() const;
  int laneHeight() const;
  int contentHeight() const;
  void setHovered(int bar);
  void paintBars(QPainter& p, const QRect& plot) const;
  void paintLabels(QPainter& p) const;

  const TimelineModel* model_ = nullptr;
  double t0_ = 0, t1_ = 1;
  std::vector<char> highlighted_;  // per model layer
  bool highlighting_ = false;
  int hovered_ = -1;
  bool pressed_ = false, dragged_ = false;
  QPoint pressPos_;
  double pressT0_ = 0;
};

}  // namespace tr::gui

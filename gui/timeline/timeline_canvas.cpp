// SPDX-License-Identifier: GPL-3.0-or-later
// Painting, hit-testing and navigation of the timeline's lanes.
#include "timeline/timeline_canvas.h"

#include <QApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "timeline/time_ticks.h"
#include "timeline/timeline_model.h"
#include "widgets/hover_tooltip.h"

namespace tr::gui {

namespace {

constexpr int kMargin = 8;
constexpr int kRankGap = 6;          // between the lanes of two ranks
constexpr double kTickSpacing = 90;  // px between axis labels, at least
constexpr double kMinSpanUs = 0.01;  // deepest zoom: 10 ns across the plot
constexpr double kWheelStep = 0.8;   // one wheel notch zooms in to 80%

// In 8-bit steps, like the pixels it ends up as.
QColor mix(const QColor& a, const QColor& b, double t) {
  auto channel = [t](int x, int y) { return static_cast<int>(std::lround(x * (1 - t) + y * t)); };
  return QColor(channel(a.red(), b.red()), channel(a.green(), b.green()),
                channel(a.blue(), b.blue()));
}

}  // namespace

TimelineCanvas::TimelineCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setCursor(Qt::OpenHandCursor);
}

void TimelineCanvas::setModel(const TimelineModel* model) {
  model_ = model;
  hovered_ = -1;
  pressed_ = dragged_ = false;
  setMinimumHeight(contentHeight());
  updateGeometry();
  fit();
  update();
}

void TimelineCanvas::setHighlightedLayers(const std::vector<int>& layers) {
  highlighted_.clear();
  for (int l : layers) {
    if (l < 0) continue;
    if (static_cast<size_t>(l) >= highlighted_.size())
      highlighted_.resize(static_cast<size_t>(l) + 1, 0);
    highlighted_[static_cast<size_t>(l)] = 1;
  }
  highlighting_ = !highlighted_.empty();
  update();
}

bool TimelineCanvas::isDimmed(int bar) const {
  if (!highlighting_ || !model_ || bar < 0 || static_cast<size_t>(bar) >= model_->bars().size())
    return false;
  const int layer = model_->bars()[static_cast<size_t>(bar)].layer;
  return layer < 0 || static_cast<size_t>(layer) >= highlighted_.size() ||
         !highlighted_[static_cast<size_t>(layer)];
}

QColor TimelineCanvas::barColor(int bar) const {
  if (!model_ || bar < 0 || static_cast<size_t>(bar) >= model_->bars().size()) return {};
  const QColor c = bar_kind_color(model_->bars()[static_cast<size_t>(bar)].kind);
  // Opaque, not translucent: merged marks and the lane stripes must not show
  // through differently depending on how many bars share a pixel.
  return isDimmed(bar) ? mix(c, palette().color(QPalette::Base), 0.8) : c;
}

void TimelineCanvas::setVisibleRange(double t0_us, double t1_us) {
  if (!std::isfinite(t0_us) || !std::isfinite(t1_us)) return;
  if (t1_us < t0_us) std::swap(t0_us, t1_us);
  const double duration = model_ ? std::max(model_->durationUs(), kMinSpanUs) : 1.0;
  const double span = std::clamp(t1_us - t0_us, kMinSpanUs, duration * 2);
  // Half a screen of empty time on either side at most, so the profile
  // cannot be pushed out of sight.
  const double t0 = std::clamp(t0_us, -span / 2, std::max(-span / 2, duration - span / 2));
  if (t0 == t0_ && t0 + span == t1_) return;
  t0_ = t0;
  t1_ = t0 + span;
  update();
  emit visibleRangeChanged(t0_, t1_);
}

void TimelineCanvas::fit() {
  const double d = model_ ? std::max(model_->durationUs(), kMinSpanUs) : 1.0;
  setVisibleRange(-0.01 * d, 1.01 * d);
}

void TimelineCanvas::zoomAt(double x, double factor) {
  if (!(factor > 0)) return;
  const QRect plot = plotRect();
  if (plot.width() <= 0) return;
  const double t = timeAt(x);
  const double duration = model_ ? std::max(model_->durationUs(), kMinSpanUs) : 1.0;
  const double span = std::clamp((t1_ - t0_) * factor, kMinSpanUs, duration * 2);
  const double t0 = t - (x - plot.left()) / plot.width() * span;
  setVisibleRange(t0, t0 + span);
}

void TimelineCanvas::panByPixels(double dx) {
  const QRect plot = plotRect();
  if (plot.width() <= 0) return;
  const double dt = dx * (t1_ - t0_) / plot.width();
  setVisibleRange(t0_ - dt, t1_ - dt);
}

int TimelineCanvas::labelWidth() const {
  return fontMetrics().horizontalAdvance(QStringLiteral("rank 000 · UPDATE")) + 2 * kMargin;
}
int TimelineCanvas::axisHeight() const {
  return fontMetrics().height() + 10;
}
int TimelineCanvas::laneHeight() const {
  return std::max(18, fontMetrics().height() + 6);
}

int TimelineCanvas::contentHeight() const {
  const int lanes = model_ ? static_cast<int>(model_->lanes().size()) : kNumStreams;
  const int ranks = std::max(1, lanes / kNumStreams);
  return axisHeight() + lanes * laneHeight() + (ranks - 1) * kRankGap + kMargin;
}

QRect TimelineCanvas::plotRect() const {
  const int lanes = model_ ? static_cast<int>(model_->lanes().size()) : 0;
  const int ranks = std::max(1, lanes / kNumStreams);
  return QRect(labelWidth(), axisHeight(), std::max(0, width() - labelWidth() - kMargin),
               lanes * laneHeight() + (ranks - 1) * kRankGap);
}

double TimelineCanvas::xAt(double t_us) const {
  const QRect plot = plotRect();
  return plot.left() + (t_us - t0_) / (t1_ - t0_) * plot.width();
}

double TimelineCanvas::timeAt(double x) const {
  const QRect plot = plotRect();
  if (plot.width() <= 0) return t0_;
  return t0_ + (x - plot.left()) / plot.width() * (t1_ - t0_);
}

QRectF TimelineCanvas::laneRect(int lane) const {
  if (!model_ || lane < 0 || static_cast<size_t>(lane) >= model_->lanes().size()) return {};
  const QRect plot = plotRect();
  const int y = plot.top() + lane * laneHeight() + (lane / kNumStreams) * kRankGap;
  return QRectF(plot.left(), y, plot.width(), laneHeight());
}

QRectF TimelineCanvas::barRect(int bar) const {
  if (!model_ || bar < 0 || static_cast<size_t>(bar) >= model_->bars().size()) return {};
  const TimelineBar& b = model_->bars()[static_cast<size_t>(bar)];
  const QRectF lane = laneRect(b.lane);
  const double x0 = xAt(b.start_us);
  return QRectF(x0, lane.top() + 2, std::max(1.0, xAt(b.end_us) - x0), lane.height() - 4);
}

int TimelineCanvas::laneAt(QPoint p) const {
  if (!model_) return -1;
  const QRect plot = plotRect();
  if (p.y() < plot.top() || p.y() >= plot.bottom() + 1) return -1;
  const int stride = kNumStreams * laneHeight() + kRankGap;
  const int rank = (p.y() - plot.top()) / stride;
  const int within = (p.y() - plot.top()) % stride / laneHeight();
  if (within >= kNumStreams) return -1;  // in the gap between ranks
  const int lane = rank * kNumStreams + within;
  return static_cast<size_t>(lane) < model_->lanes().size() ? lane : -1;
}

int TimelineCanvas::barAt(QPoint p) const {
  const int lane = laneAt(p);
  const QRect plot = plotRect();
  if (lane < 0 || p.x() < plot.left() || p.x() > plot.right()) return -1;
  const double t = timeAt(p.x());
  const double slack = 2 * (t1_ - t0_) / std::max(1, plot.width());
  const auto [first, last] = model_->laneRange(lane, t - slack, t + slack);
  const std::vector<int>& ids = model_->laneBars(lane);
  int best = -1;
  double best_distance = slack;
  for (size_t k = first; k < last; ++k) {
    const TimelineBar& b = model_->bars()[static_cast<size_t>(ids[k])];
    const double distance = t < b.start_us ? b.start_us - t : (t > b.end_us ? t - b.end_us : 0);
    // Among bars under the cursor the shortest wins: it is the one that is
    // hard to hit otherwise.
    if (distance < best_distance ||
        (distance == best_distance && best >= 0 &&
         b.end_us - b.start_us < model_->bars()[static_cast<size_t>(best)].end_us -
                                     model_->bars()[static_cast<size_t>(best)].start_us)) {
      best = ids[k];
      best_distance = distance;
    }
  }
  return best;
}

QString TimelineCanvas::describeAt(QPoint p) const {
  const int bar = barAt(p);
  return bar >= 0 ? model_->describe(bar) : QString();
}

QSize TimelineCanvas::sizeHint() const {
  return QSize(900, contentHeight());
}
QSize TimelineCanvas::minimumSizeHint() const {
  return QSize(labelWidth() + 200, contentHeight());
}

void TimelineCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (!model_ || model_->lanes().empty()) return;
  const QRect plot = plotRect();

  for (int lane = 0; lane < static_cast<int>(model_->lanes().size()); ++lane)
    if ((lane / kNumStreams) % 2)
      p.fillRect(laneRect(lane), palette().color(QPalette::AlternateBase));

  const QColor grid = mix(palette().color(QPalette::Base), palette().color(QPalette::Text), 0.15);
  p.setPen(palette().color(QPalette::Text));
  for (const TimeTick& tick : time_ticks(t0_, t1_, plot.width(), kTickSpacing)) {
    const int x = static_cast<int>(std::lround(xAt(tick.us)));
    p.setPen(grid);
    p.drawLine(x, plot.top() - 4, x, plot.bottom());
    p.setPen(palette().color(QPalette::Text));
    // Centred on its tick, but never under the lane names or past the edge.
    const int w = fontMetrics().horizontalAdvance(tick.text) + 4;
    const int left = std::clamp(x - w / 2, plot.left(), std::max(plot.left(), width() - w));
    p.drawText(QRect(left, 0, w, plot.top() - 4), Qt::AlignHCenter | Qt::AlignBottom, tick.text);
  }

  p.save();
  p.setClipRect(plot);
  paintBars(p, plot);
  if (hovered_ >= 0) {
    p.setPen(QPen(palette().color(QPalette::Text), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(barRect(hovered_).adjusted(-1, -1, 0, 0));
  }
  p.restore();
  paintLabels(p);
}

void TimelineCanvas::paintBars(QPainter& p, const QRect& plot) const {
  const auto& bars = model_->bars();
  const QColor outline = palette().color(QPalette::Text);
  for (int lane = 0; lane < static_cast<int>(model_->lanes().size()); ++lane) {
    const QRectF lr = laneRect(lane);
    const double y = lr.top() + 2, h = lr.height() - 4;
    const auto [first, last] = model_->laneRange(lane, t0_, t1_);
    const std::vector<int>& ids = model_->laneBars(lane);
    // A run of sub-pixel bars drawn as one mark in the colour of its first bar.
    double run0 = 0, run1 = -1e9;
    QColor runColor;
    auto flush = [&] {
      if (run1 > run0 - 1e-9 && runColor.isValid())
        p.fillRect(QRectF(run0, y, std::max(1.0, run1 - run0), h), runColor);
      runColor = QColor();
    };
    for (size_t k = first; k < last; ++k) {
      const int id = ids[k];
      const TimelineBar& b = bars[static_cast<size_t>(id)];
      const double x0 = std::max(xAt(b.start_us), plot.left() - 1.0);
      const double x1 = std::min(xAt(b.end_us), plot.right() + 2.0);
      if (x1 - x0 < 1.0) {
        if (runColor.isValid() && x0 <= run1 + 1.0) {
          run1 = std::max(run1, x1);
          continue;
        }
        flush();
        run0 = x0;
        run1 = std::max(x1, x0 + 1.0);
        runColor = barColor(id);
        continue;
      }
      flush();
      const QRectF r(x0, y, x1 - x0, h);
      const QColor c = barColor(id);
      p.fillRect(r, c);
      if (highlighting_ && !isDimmed(id) && r.width() >= 3) {
        p.setPen(QPen(outline, 1));
        p.setBrush(Qt::NoBrush);
        p.drawRect(r.adjusted(0, 0, -1, -1));
      }
      if (r.width() > 48) {
        p.setPen(c.lightnessF() > 0.55 ? Qt::black : Qt::white);
        const QRectF text = r.adjusted(3, 0, -3, 0);
        p.drawText(text, Qt::AlignVCenter | Qt::AlignLeft,
                   fontMetrics().elidedText(model_->label(id), Qt::ElideRight,
                                            static_cast<int>(text.width())));
      }
    }
    flush();
  }
}

void TimelineCanvas::paintLabels(QPainter& p) const {
  p.fillRect(QRect(0, 0, labelWidth() - 2, height()), palette().color(QPalette::Window));
  p.setPen(palette().color(QPalette::WindowText));
  for (int lane = 0; lane < static_cast<int>(model_->lanes().size()); ++lane) {
    const QRectF r = laneRect(lane);
    p.drawText(QRectF(kMargin, r.top(), labelWidth() - 2 * kMargin, r.height()),
               Qt::AlignVCenter | Qt::AlignLeft, model_->laneName(lane));
  }
}

void TimelineCanvas::wheelEvent(QWheelEvent* event) {
  if (!model_) return;
  const QPoint delta = event->angleDelta();
  const bool sideways =
      std::abs(delta.x()) > std::abs(delta.y()) || (event->modifiers() & Qt::ShiftModifier);
  if (sideways) {
    panByPixels((delta.x() != 0 ? delta.x() : delta.y()) / 2.0);
  } else if (delta.y() != 0) {
    zoomAt(event->position().x(), std::pow(kWheelStep, delta.y() / 120.0));
  }
  event->accept();
}

void TimelineCanvas::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return QWidget::mousePressEvent(event);
  pressed_ = true;
  dragged_ = false;
  pressPos_ = event->position().toPoint();
  pressT0_ = t0_;
  event->accept();
}

void TimelineCanvas::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pos = event->position().toPoint();
  if (pressed_ && (event->buttons() & Qt::LeftButton)) {
    const int dx = pos.x() - pressPos_.x();
    if (!dragged_ && std::abs(dx) >= QApplication::startDragDistance()) {
      dragged_ = true;
      setCursor(Qt::ClosedHandCursor);
    }
    if (dragged_) {
      const double span = t1_ - t0_;
      const double t0 = pressT0_ - dx * span / std::max(1, plotRect().width());
      setVisibleRange(t0, t0 + span);
    }
    return;
  }
  setHovered(barAt(pos));
}

void TimelineCanvas::mouseReleaseEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !pressed_) return QWidget::mouseReleaseEvent(event);
  pressed_ = false;
  setCursor(Qt::OpenHandCursor);
  if (!dragged_) {
    const int bar = barAt(event->position().toPoint());
    if (bar >= 0) emit barClicked(bar);
  }
  dragged_ = false;
}

void TimelineCanvas::keyPressEvent(QKeyEvent* event) {
  const double centre = plotRect().center().x();
  switch (event->key()) {
    case Qt::Key_Plus:
    case Qt::Key_Equal:
      zoomAt(centre, kWheelStep);
      break;
    case Qt::Key_Minus:
      zoomAt(centre, 1 / kWheelStep);
      break;
    case Qt::Key_0:
    case Qt::Key_Home:
      fit();
      break;
    case Qt::Key_Left:
      panByPixels(plotRect().width() / 10.0);
      break;
    case Qt::Key_Right:
      panByPixels(-plotRect().width() / 10.0);
      break;
    default:
      return QWidget::keyPressEvent(event);
  }
}

void TimelineCanvas::leaveEvent(QEvent* event) {
  setHovered(-1);
  QWidget::leaveEvent(event);
}

bool TimelineCanvas::event(QEvent* event) {
  if (show_hover_tooltip(this, event, [this](QPoint p) { return describeAt(p); })) return true;
  return QWidget::event(event);
}

void TimelineCanvas::setHovered(int bar) {
  if (bar == hovered_) return;
  hovered_ = bar;
  update();
  emit hovered(bar >= 0 ? model_->describe(bar) : QString());
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
#include "region_bands.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "pool_blocks.h"
#include "widgets/bytes_text.h"
#include "widgets/count_text.h"
#include "widgets/hover_tooltip.h"

namespace tr::gui {

namespace {

constexpr int kMargin = 8;
constexpr int kStripHeight = 40;
constexpr int kGap = 14;
constexpr int kRowHeight = 22;
constexpr int kTextWidth = 250;

QColor series_colour(char series) {
  switch (series) {
    case 'B':
      return QColor(0x8d, 0x6e, 0x63);
    case 'W':
      return QColor(0x1e, 0x88, 0xe5);
    case 'E':
      return QColor(0x00, 0xac, 0xc1);
    case 'A':
      return QColor(0x5c, 0x6b, 0xc0);
    case 'G':
      return QColor(0xe5, 0x39, 0x35);
    case 'R':
      return QColor(0xfd, 0xd8, 0x35);
    case 'H':
      return QColor(0xef, 0x6c, 0x00);
    case 'M':
      return QColor(0x43, 0xa0, 0x47);
    case 'V':
      return QColor(0x7c, 0xb3, 0x42);
    case 'N':
      return QColor(0xab, 0x47, 0xbc);
    case 'I':
      return QColor(0x26, 0xa6, 0x9a);
    case 'F':
      return QColor(0xff, 0xa7, 0x26);
    case 'S':
      return QColor(0x78, 0x90, 0x9c);
    case 'T':
      return QColor(0xa1, 0x88, 0x7f);
    default:
      return QColor(0x9e, 0x9e, 0x9e);
  }
}

QString engine_name(Region r) {
  const std::string_view n = region_name(r);
  return QString::fromUtf8(n.data(), static_cast<int>(n.size()));
}

// The pool holds features and gradient slots above all: it takes the F colour.
QColor band_colour(int band) {
  return series_colour(band == kPoolBand ? 'F' : region_series(static_cast<Region>(band)));
}

// "conv1.out [0, 5]": a tensor with its lifetime over the step.
QString with_lifetime(const MemoryPlan& plan, const PoolBlock& b) {
  return QStringLiteral("%1 [%2, %3]")
      .arg(QString::fromStdString(plan.get_dtensor(b.id).name))
      .arg(b.first)
      .arg(b.last);
}

}  // namespace

RegionBands::RegionBands(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

const MemoryPlan* RegionBands::plan() const {
  if (!cp_ || variant_ < 0 || static_cast<size_t>(variant_) >= cp_->plans().size()) return nullptr;
  return &cp_->plans()[static_cast<size_t>(variant_)];
}

void RegionBands::setPlan(std::shared_ptr<const CompiledPlan> cp, int variant,
                          std::shared_ptr<const PoolBlocks> blocks) {
  cp_ = std::move(cp);
  variant_ = variant;
  blocks_.reset();
  shown_.clear();
  if (const MemoryPlan* p = plan()) {
    // A packed plan lays the pool out after every other region.
    for (int r = 0; r < kNumRegions; ++r)
      if (p->region(static_cast<Region>(r)).total_bytes > 0 &&
          !(p->packed() && p->step_local(static_cast<Region>(r))))
        shown_.push_back(r);
    if (p->packed() && p->pool().bytes > 0) {
      shown_.push_back(kPoolBand);
      blocks_ = blocks && blocks->variant() == variant
                    ? std::move(blocks)
                    : std::make_shared<const PoolBlocks>(*cp_, variant);
    }
  }
  if (selected_ >= 0 && std::find(shown_.begin(), shown_.end(), selected_) == shown_.end())
    selected_ = -1;
  hovered_ = -1;
  layoutStrip();
  collectMarks();
  updateGeometry();
  update();
}

void RegionBands::setHighlightedLayers(std::vector<int> layers) {
  layers_ = std::move(layers);
  collectMarks();
  update();
}

void RegionBands::collectMarks() {
  marked_.clear();
  const MemoryPlan* p = plan();
  if (!p || layers_.empty()) return;
  for (const DTensor& t : p->dtensors())
    if (std::find(layers_.begin(), layers_.end(), t.owner) != layers_.end())
      marked_.push_back(t.id);
  std::sort(marked_.begin(), marked_.end(), [p](DTensorId a, DTensorId b) {
    return p->get_dtensor(a).offset < p->get_dtensor(b).offset;
  });
}

QRectF RegionBands::tensorMark(DTensorId id) const {
  const MemoryPlan* p = plan();
  if (!p || !p->in_use(id)) return {};
  const DTensor& t = p->get_dtensor(id);
  const int band = band_of(*p, t);
  const QRect strip = stripRect();
  for (const Segment& s : segments_) {
    if (s.band != band) continue;
    const double per_byte =
        (s.x1 - s.x0) / std::max<double>(1.0, static_cast<double>(bandBytes(band)));
    const double x0 = s.x0 + static_cast<double>(t.offset - bandOffset(band)) * per_byte;
    // Small tensors stay visible as a 2-pixel tick.
    const double w = std::max(2.0, static_cast<double>(t.slot_bytes) * per_byte);
    return QRectF(x0, strip.top(), w, strip.height());
  }
  return {};
}

void RegionBands::setScale(Scale scale) {
  scale_ = scale;
  layoutStrip();
  update();
}

void RegionBands::setSelectedRegion(int region) {
  selected_ = region;
  update();
}

bool RegionBands::showsPool() const {
  return std::find(shown_.begin(), shown_.end(), kPoolBand) != shown_.end();
}

uint64_t RegionBands::bandOffset(int band) const {
  const MemoryPlan* p = plan();
  if (!p) return 0;
  return band == kPoolBand ? p->pool().offset : p->region(static_cast<Region>(band)).base_offset;
}

uint64_t RegionBands::bandBytes(int band) const {
  const MemoryPlan* p = plan();
  if (!p) return 0;
  return band == kPoolBand ? p->pool().bytes : p->region(static_cast<Region>(band)).total_bytes;
}

double RegionBands::weight(uint64_t bytes) const {
  return scale_ == Scale::Linear ? static_cast<double>(bytes)
                                 : std::log2(1.0 + static_cast<double>(bytes));
}

int RegionBands::labelWidth() const {
  int widest = fontMetrics().horizontalAdvance(QStringLiteral("● Scratch"));
  for (int b : shown_)
    widest =
        std::max(widest, fontMetrics().horizontalAdvance(QStringLiteral("● ") + band_title(b)));
  // The bars keep at least two thirds of the row.
  return std::min(widest + 12, std::max(80, width() / 3));
}

QRect RegionBands::stripRect() const {
  return QRect(kMargin, kMargin, std::max(10, width() - 2 * kMargin), kStripHeight);
}

QRectF RegionBands::segmentRect(int band) const {
  const QRect strip = stripRect();
  for (const Segment& s : segments_)
    if (s.band == band) return QRectF(s.x0, strip.top(), s.x1 - s.x0, strip.height());
  return {};
}

void RegionBands::layoutStrip() {
  segments_.clear();
  const MemoryPlan* p = plan();
  if (!p) return;
  const QRect strip = stripRect();
  double total = 0;
  for (int b : shown_) total += weight(bandBytes(b));
  if (total <= 0) return;
  double x = strip.left();
  for (int b : shown_) {
    const double w = weight(bandBytes(b)) / total * strip.width();
    segments_.push_back({b, x, x + w});
    x += w;
  }
}

QRect RegionBands::rowRect(int band) const {
  const auto it = std::find(shown_.begin(), shown_.end(), band);
  if (it == shown_.end()) return {};
  const int row = static_cast<int>(it - shown_.begin());
  return QRect(kMargin, kMargin + kStripHeight + kGap + row * kRowHeight, width() - 2 * kMargin,
               kRowHeight);
}

QRect RegionBands::barRect(int band) const {
  const QRect row = rowRect(band);
  if (!plan() || row.isEmpty()) return {};
  uint64_t largest = 0;
  for (int s : shown_) largest = std::max(largest, bandBytes(s));
  const int left = row.left() + labelWidth();
  const int span = std::max(10, row.width() - labelWidth() - kTextWidth);
  const double fraction = weight(bandBytes(band)) / weight(largest);
  const int w = std::max(2, static_cast<int>(std::lround(fraction * span)));
  return QRect(left, row.top() + 3, w, row.height() - 6);
}

int RegionBands::regionAt(QPoint pt) const {
  if (stripRect().contains(pt)) {
    for (const Segment& s : segments_)
      if (pt.x() >= s.x0 && pt.x() < s.x1) return s.band;
    return -1;
  }
  for (int b : shown_)
    if (rowRect(b).contains(pt)) return b;
  return -1;
}

std::vector<DTensorId> RegionBands::tensorsAt(QPoint pt) const {
  const MemoryPlan* p = plan();
  if (!p || !stripRect().contains(pt)) return {};
  for (const Segment& s : segments_) {
    if (pt.x() < s.x0 || pt.x() >= s.x1) continue;
    const double f = (pt.x() - s.x0) / std::max(1e-9, s.x1 - s.x0);
    const uint64_t within = static_cast<uint64_t>(f * static_cast<double>(bandBytes(s.band)));
    if (s.band == kPoolBand) {
      std::vector<DTensorId> ids;
      if (blocks_)
        for (int i : blocks_->at(within))
          ids.push_back(blocks_->blocks()[static_cast<size_t>(i)].id);
      return ids;
    }
    const RegionInfo& info = p->region(static_cast<Region>(s.band));
    const uint64_t at = info.base_offset + within;
    for (DTensorId id : info.tensors) {
      const DTensor& t = p->get_dtensor(id);
      if (at >= t.offset && at < t.offset + t.slot_bytes) return {id};
    }
    if (info.tensors.empty()) return {};
    return {info.tensors.back()};
  }
  return {};
}

DTensorId RegionBands::tensorAt(QPoint pt) const {
  const std::vector<DTensorId> ids = tensorsAt(pt);
  return ids.empty() ? kNoTensor : ids.front();
}

QString RegionBands::describeAt(QPoint pt) const {
  const MemoryPlan* p = plan();
  const int band = regionAt(pt);
  if (!p || band < 0) return {};
  const double share = 100.0 * static_cast<double>(bandBytes(band)) /
                       static_cast<double>(std::max<uint64_t>(1, p->total_bytes()));
  QString text;
  if (band == kPoolBand) {
    text = tr("%1: offset %2, %3 (%4 bytes, %5% of the arena), %6 in use, %7 before packing")
               .arg(pool_band_long_title(plan() && plan()->gradients_in_pool()),
                    exact_bytes_text(bandOffset(band)), bytes_text(bandBytes(band)),
                    exact_bytes_text(bandBytes(band)))
               .arg(share, 0, 'f', 2)
               .arg(count_text(blocks_ ? static_cast<qint64>(blocks_->blocks().size()) : 0,
                               tr("%1 tensor"), tr("%1 tensors")),
                    bytes_text(blocks_ ? blocks_->slotBytes() : 0));
  } else {
    const Region region = static_cast<Region>(band);
    const RegionInfo& info = p->region(region);
    text = tr("%1 (%2): offset %3, %4 (%5 bytes, %6% of the arena), %7")
               .arg(band_title(band), engine_name(region), exact_bytes_text(info.base_offset),
                    bytes_text(info.total_bytes), exact_bytes_text(info.total_bytes))
               .arg(share, 0, 'f', 2)
               .arg(count_text(static_cast<qint64>(info.tensors.size()), tr("%1 tensor"),
                               tr("%1 tensors")));
  }
  const std::vector<DTensorId> ids = tensorsAt(pt);
  if (ids.size() > 1 && blocks_) {
    QStringList names;
    for (DTensorId other : ids)
      names << with_lifetime(*p, blocks_->blocks()[static_cast<size_t>(blocks_->indexOf(other))]);
    text += tr("\n%1 tensors share these bytes at different times: %2")
                .arg(ids.size())
                .arg(names.join(QStringLiteral(", ")));
  }
  if (!ids.empty()) {
    const DTensorId id = ids.front();
    const DTensor& t = p->get_dtensor(id);
    const QString layer =
        t.owner >= 0
            ? QString::fromStdString(cp_->project().model.nodes[static_cast<size_t>(t.owner)].id)
            : tr("engine");
    text += tr("\nDTensor %1 %2 (layer %3): %4 %5, padded C %6, offset %7, slot %8 bytes")
                .arg(t.id)
                .arg(QString::fromStdString(t.name), layer, QString::fromStdString(t.shape.str()),
                     QString::fromUtf8(dtype_name(t.dtype).data()))
                .arg(t.padded_c())
                .arg(exact_bytes_text(t.offset), exact_bytes_text(t.slot_bytes));
    if (const int i = blocks_ ? blocks_->indexOf(id) : -1; i >= 0) {
      const PoolBlock& b = blocks_->blocks()[static_cast<size_t>(i)];
      text += tr(", live [%1, %2]").arg(b.first).arg(b.last);
    }
  }
  return text;
}

QSize RegionBands::sizeHint() const {
  return QSize(720,
               kMargin * 2 + kStripHeight + kGap + static_cast<int>(shown_.size()) * kRowHeight);
}

QSize RegionBands::minimumSizeHint() const {
  return QSize(400, sizeHint().height());
}

void RegionBands::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const QPalette pal = palette();
  const MemoryPlan* p = plan();
  if (!p) return;
  const QRect strip = stripRect();
  painter.setPen(pal.color(QPalette::Mid));
  painter.setBrush(pal.color(QPalette::Base));
  painter.drawRect(strip.adjusted(0, 0, -1, -1));
  for (const Segment& s : segments_) {
    const QRectF seg(s.x0, strip.top(), std::max(1.0, s.x1 - s.x0), strip.height());
    QColor c = band_colour(s.band);
    if (s.band != selected_ && selected_ >= 0) c.setAlpha(110);
    painter.fillRect(seg, c);
    painter.setPen(pal.color(QPalette::Base));
    painter.drawLine(seg.topLeft(), seg.bottomLeft());
    if (seg.width() > 60) {
      painter.setPen(Qt::black);
      const QString name = s.band == kPoolBand
                               ? pool_band_long_title(plan() && plan()->gradients_in_pool())
                               : band_title(s.band);
      painter.drawText(
          seg.adjusted(3, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
          fontMetrics().elidedText(name, Qt::ElideRight, static_cast<int>(seg.width()) - 6));
    }
    if (s.band == hovered_ || s.band == selected_) {
      painter.setPen(QPen(pal.color(QPalette::Highlight), 2));
      painter.setBrush(Qt::NoBrush);
      painter.drawRect(seg.adjusted(1, 1, -1, -1));
    }
  }

  // The highlighted layers' tensors: dark ticks across the strip.
  for (DTensorId id : marked_) {
    const QRectF m = tensorMark(id);
    if (m.isEmpty()) continue;
    painter.fillRect(m.adjusted(0, 4, 0, -4), QColor(0x21, 0x21, 0x21, 200));
  }

  for (int b : shown_) {
    const QRect row = rowRect(b);
    int marks = 0;
    for (DTensorId id : marked_) marks += band_of(*p, p->get_dtensor(id)) == b ? 1 : 0;
    if (b == selected_)
      painter.fillRect(row, pal.color(QPalette::Highlight).lighter(170));
    else if (b == hovered_)
      painter.fillRect(row, pal.color(QPalette::AlternateBase));
    painter.setPen(pal.color(QPalette::Text));
    QFont label_font = font();
    label_font.setBold(marks > 0);
    painter.setFont(label_font);
    const QRect label(row.left() + 4, row.top(), labelWidth() - 8, row.height());
    painter.drawText(
        label, Qt::AlignLeft | Qt::AlignVCenter,
        fontMetrics().elidedText(marks > 0 ? QStringLiteral("● ") + band_title(b) : band_title(b),
                                 Qt::ElideRight, label.width()));
    painter.setFont(font());
    painter.fillRect(barRect(b), band_colour(b));
    const double share = 100.0 * static_cast<double>(bandBytes(b)) /
                         static_cast<double>(std::max<uint64_t>(1, p->total_bytes()));
    const QString text = tr("%1 · %2% · offset %3")
                             .arg(bytes_text(bandBytes(b)))
                             .arg(share, 0, 'f', 2)
                             .arg(exact_bytes_text(bandOffset(b)));
    painter.drawText(QRect(row.right() - kTextWidth + 8, row.top(), kTextWidth - 8, row.height()),
                     Qt::AlignLeft | Qt::AlignVCenter, text);
  }
}

void RegionBands::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pt = event->position().toPoint();
  const int r = regionAt(pt);
  if (r != hovered_) {
    hovered_ = r;
    update();
  }
  emit hovered(describeAt(pt));
}

void RegionBands::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPoint pt = event->position().toPoint();
  const int r = regionAt(pt);
  if (r < 0) return;
  setSelectedRegion(r);
  emit regionClicked(r);
  const DTensorId id = tensorAt(pt);
  if (id != kNoTensor) emit tensorClicked(id);
}

void RegionBands::leaveEvent(QEvent* event) {
  hovered_ = -1;
  update();
  emit hovered(QString());
  QWidget::leaveEvent(event);
}

bool RegionBands::event(QEvent* event) {
  if (show_hover_tooltip(this, event, [this](QPoint p) { return describeAt(p); })) return true;
  if (event->type() == QEvent::Resize) layoutStrip();
  return QWidget::event(event);
}

}  // namespace tr::gui

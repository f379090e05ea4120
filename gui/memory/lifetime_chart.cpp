// SPDX-License-Identifier: GPL-3.0-or-later
#include "lifetime_chart.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <limits>

#include "pool_blocks.h"
#include "widgets/bytes_text.h"
#include "widgets/count_text.h"
#include "widgets/hover_tooltip.h"

namespace tr::gui {

namespace {

constexpr int kChartMargin = 8;
constexpr int kTickLabelGap = 8;  // px between two graph names on one row
constexpr int kMaxShared = 8;     // tensors named in a tooltip before "and N more"

// Mid-tone colours that read on a light and on a dark base alike; features in
// the F series' orange (the strip's pool), gradients in the G series' red.
QColor kind_colour(BlockKind kind) {
  switch (kind) {
    case BlockKind::FeatureFp32:
      return QColor(0xfb, 0x8c, 0x00);
    case BlockKind::FeatureFp16:
      return QColor(0xfd, 0xd8, 0x35);
    case BlockKind::FeatureBf16:
      return QColor(0xc0, 0xca, 0x33);
    case BlockKind::GradSlot:
      return QColor(0xe5, 0x39, 0x35);
    case BlockKind::Scratch:
      return QColor(0x78, 0x90, 0x9c);
  }
  return {};
}

QColor mix(const QColor& a, const QColor& b, double t) {
  auto channel = [t](int x, int y) { return static_cast<int>(std::lround(x * (1 - t) + y * t)); };
  return QColor(channel(a.red(), b.red()), channel(a.green(), b.green()),
                channel(a.blue(), b.blue()));
}

QFont small_font(const QFont& f) {
  QFont s = f;
  s.setPointSizeF(f.pointSizeF() * 0.85);
  return s;
}

}  // namespace

LifetimeChart::LifetimeChart(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

LifetimeChart::~LifetimeChart() = default;

void LifetimeChart::setPlan(std::shared_ptr<const CompiledPlan> cp, int variant,
                            std::shared_ptr<const PoolBlocks> blocks) {
  cp_ = std::move(cp);
  blocks_.reset();
  ticks_.clear();
  hovered_ = -1;
  hoveredShares_.clear();
  if (cp_ && variant >= 0 && static_cast<size_t>(variant) < cp_->plans().size()) {
    blocks_ = blocks && blocks->variant() == variant
                  ? std::move(blocks)
                  : std::make_shared<const PoolBlocks>(*cp_, variant);
    const std::vector<StepPosition>& order = blocks_->lifetimes().order;
    for (size_t p = 0; p < order.size(); ++p)
      if (p == 0 || order[p].graph != order[p - 1].graph)
        ticks_.push_back({static_cast<int>(p), QString::fromUtf8(graph_id_name(order[p].graph))});
  }
  if (blocks_ && blocks_->indexOf(selected_) < 0) selected_ = kNoTensor;
  relayout();
  update();
}

void LifetimeChart::setSelectedTensor(DTensorId id) {
  if (id == selected_) return;
  selected_ = id;
  update();
}

QString LifetimeChart::legendText() const {
  if (!blocks_) return {};
  if (blocks_->blocks().empty()) return tr("No features, gradient slots or scratch in this step");
  if (blocks_->packed())
    return tr("pool %1, peak live %2, %3 before packing")
        .arg(bytes_text(blocks_->bytes()), bytes_text(blocks_->peakLiveBytes()),
             bytes_text(blocks_->slotBytes()));
  return tr("packing off: %1, every tensor its own bytes; peak live %2")
      .arg(bytes_text(blocks_->bytes()), bytes_text(blocks_->peakLiveBytes()));
}

int LifetimeChart::legendHeight() const {
  return 2 * fontMetrics().height() + 8;
}

int LifetimeChart::axisHeight() const {
  return 2 * QFontMetrics(small_font(font())).height() + 8;
}

int LifetimeChart::axisLabelWidth() const {
  return QFontMetrics(small_font(font())).horizontalAdvance(QStringLiteral("888.88 MiB")) + 10;
}

QRect LifetimeChart::plotRect() const {
  const int left = kChartMargin + axisLabelWidth();
  const int top = kChartMargin + legendHeight();
  return QRect(left, top, std::max(10, width() - left - kChartMargin),
               std::max(10, height() - top - axisHeight() - kChartMargin));
}

uint64_t LifetimeChart::budgetInPool() const {
  if (!cp_ || !blocks_ || !blocks_->packed() || cp_->memory_budget() == 0) return 0;
  const uint64_t outside = cp_->plans()[static_cast<size_t>(blocks_->variant())].pool().offset;
  return cp_->memory_budget() > outside ? cp_->memory_budget() - outside : 0;
}

double LifetimeChart::yMax() const {
  if (!blocks_) return 1;
  // Head room over the pool line for its label.
  const double top =
      static_cast<double>(std::max({blocks_->bytes(), blocks_->peakLiveBytes(), budgetInPool()}));
  return std::max(1.0, top * 1.1);
}

double LifetimeChart::xAt(double position) const {
  const QRect plot = plotRect();
  const int n = blocks_ ? std::max(1, blocks_->positions()) : 1;
  return plot.left() + position / n * plot.width();
}

double LifetimeChart::yAt(double bytes) const {
  const QRect plot = plotRect();
  return plot.top() + plot.height() - bytes / yMax() * plot.height();
}

void LifetimeChart::relayout() {
  rects_.clear();
  labels_.clear();
  yTicks_.clear();
  if (!blocks_) return;
  for (const PoolBlock& b : blocks_->blocks()) {
    const double x0 = xAt(b.first), x1 = xAt(b.last + 1);
    const double y0 = yAt(static_cast<double>(b.end())), y1 = yAt(static_cast<double>(b.offset));
    // A pixel at least each way, so the smallest scratch stays findable.
    rects_.emplace_back(x0, y0, std::max(1.0, x1 - x0), std::max(1.0, y1 - y0));
  }
  // Byte ticks a power of two apart, four to eight of them.
  uint64_t step = 1;
  while (static_cast<double>(step) * 6 < yMax()) step *= 2;
  // None so near the top that its label would run into the legend.
  const double top = plotRect().top() + QFontMetrics(small_font(font())).height() / 2.0;
  for (uint64_t y = step; static_cast<double>(y) < yMax() && yAt(static_cast<double>(y)) >= top;
       y += step)
    yTicks_.push_back(y);
  // Graph names on two rows, the longest graphs first (DEEP_FWD_BWD before a
  // two-node TRANSFER_A), each centred under its span when it fits there;
  // one that finds no room on either row is left to the tooltip.
  const QFontMetrics fm(small_font(font()));
  const QRect plot = plotRect();
  std::vector<size_t> byLength(ticks_.size());
  for (size_t i = 0; i < ticks_.size(); ++i) byLength[i] = i;
  auto endOf = [this](size_t i) {
    return i + 1 < ticks_.size() ? ticks_[i + 1].position : blocks_->positions();
  };
  std::stable_sort(byLength.begin(), byLength.end(), [&](size_t a, size_t b) {
    return endOf(a) - ticks_[a].position > endOf(b) - ticks_[b].position;
  });
  for (size_t i : byLength) {
    const int w = fm.horizontalAdvance(ticks_[i].name);
    const double x0 = xAt(ticks_[i].position), x1 = xAt(endOf(i));
    const bool centred = x1 - x0 >= w + kTickLabelGap;
    int x = static_cast<int>(std::lround(centred ? (x0 + x1 - w) / 2 : x0 + 2));
    x = std::clamp(x, plot.left(), std::max(plot.left(), width() - kChartMargin - w));
    const int tickX = static_cast<int>(std::lround(x0));
    for (int row = 0; row < 2; ++row) {
      const QRect r(x, plot.bottom() + 4 + row * fm.height(), w, fm.height());
      const bool free = std::none_of(labels_.begin(), labels_.end(), [&](const TickLabel& l) {
        const bool beside = l.rect.top() == r.top() && r.left() < l.rect.right() + kTickLabelGap &&
                            l.rect.left() < r.right() + kTickLabelGap;
        // A name hanging from its tick on the second row: its line must not
        // run through a name on the first.
        const bool crossed = !centred && l.rect.top() < r.top() && tickX >= l.rect.left() - 2 &&
                             tickX <= l.rect.right() + 2;
        // Nor may a first-row name be put where a second-row line runs.
        const bool crosses = !l.centred && l.rect.top() > r.top() && l.line >= r.left() - 2 &&
                             l.line <= r.right() + 2;
        return beside || crossed || crosses;
      });
      if (!free) continue;
      labels_.push_back({r, static_cast<int>(i), centred, tickX});
      break;
    }
  }
}

QStringList LifetimeChart::crossedLabels() const {
  QStringList out;
  for (const TickLabel& a : labels_)
    for (const TickLabel& b : labels_) {
      if (&a == &b) continue;
      const QString names = ticks_[static_cast<size_t>(a.tick)].name + QStringLiteral(" / ") +
                            ticks_[static_cast<size_t>(b.tick)].name;
      if (&a < &b && a.rect.intersects(b.rect)) out << names;
      // b hangs below a's row: its line must miss a.
      if (!b.centred && b.rect.top() > a.rect.top() && b.line >= a.rect.left() &&
          b.line <= a.rect.right())
        out << names;
    }
  return out;
}

QRectF LifetimeChart::blockRect(int block) const {
  return block >= 0 && static_cast<size_t>(block) < rects_.size()
             ? rects_[static_cast<size_t>(block)]
             : QRectF();
}

int LifetimeChart::blockAt(QPoint p) const {
  if (!plotRect().contains(p)) return -1;
  // Blocks never overlap, but their one-pixel minimum can: the smallest wins.
  const QPointF at(p.x() + 0.5, p.y() + 0.5);
  int best = -1;
  double area = 0;
  for (size_t i = 0; i < rects_.size(); ++i) {
    const QRectF& r = rects_[i];
    if (!r.adjusted(-0.5, -0.5, 0.5, 0.5).contains(at)) continue;
    const double a = r.width() * r.height();
    if (best < 0 || a < area) {
      best = static_cast<int>(i);
      area = a;
    }
  }
  return best;
}

QString LifetimeChart::lifetimeText(int block) const {
  const PoolBlock& b = blocks_->blocks()[static_cast<size_t>(block)];
  return QStringLiteral("%1 [%2, %3]")
      .arg(QString::fromStdString(
          cp_->plans()[static_cast<size_t>(blocks_->variant())].get_dtensor(b.id).name))
      .arg(b.first)
      .arg(b.last);
}

QString LifetimeChart::describeBlock(int block) const {
  if (!blocks_ || block < 0 || static_cast<size_t>(block) >= blocks_->blocks().size()) return {};
  const PoolBlock& b = blocks_->blocks()[static_cast<size_t>(block)];
  const DTensor& t = cp_->plans()[static_cast<size_t>(blocks_->variant())].get_dtensor(b.id);
  const auto& nodes = cp_->project().model.nodes;
  const QString layer = t.owner >= 0 && static_cast<size_t>(t.owner) < nodes.size()
                            ? QString::fromStdString(nodes[static_cast<size_t>(t.owner)].id)
                            : tr("engine");
  const StepLifetimes& life = blocks_->lifetimes();
  QString text =
      tr("%1 (layer %2), %3: %4 %5\nlive [%6, %7]: from %8 to %9\n%10 (%11 bytes) at %12 %13")
          .arg(QString::fromStdString(t.name), layer, block_kind_name(b.kind),
               QString::fromStdString(t.shape.str()), QString::fromUtf8(dtype_name(t.dtype).data()))
          .arg(b.first)
          .arg(b.last)
          .arg(QString::fromStdString(life.describe(cp_->project(), b.first)),
               QString::fromStdString(life.describe(cp_->project(), b.last)), bytes_text(b.bytes),
               exact_bytes_text(b.bytes), blocks_->packed() ? tr("pool offset") : tr("offset"),
               exact_bytes_text(blocks_->packed() ? b.offset : b.offset + blocks_->base()));
  if (b.recomputed)
    text += tr("\n%1's output computed again in the backward, so that it is not kept through "
               "the step")
                .arg(layer);
  const std::vector<int> shares = blocks_->sharing(block);
  if (shares.empty()) {
    if (blocks_->packed()) text += tr("\nits bytes are its own for the whole step");
    return text;
  }
  QStringList names;
  for (size_t i = 0; i < shares.size() && i < kMaxShared; ++i) names << lifetimeText(shares[i]);
  if (shares.size() > kMaxShared)
    names << tr("and %1 more").arg(shares.size() - static_cast<size_t>(kMaxShared));
  text +=
      tr("\nshares its bytes with %1 at other times: %2")
          .arg(count_text(static_cast<qint64>(shares.size()), tr("%1 tensor"), tr("%1 tensors")),
               names.join(QStringLiteral(", ")));
  return text;
}

QString LifetimeChart::describeAt(QPoint p) const {
  if (!blocks_) return {};
  const int block = blockAt(p);
  if (block >= 0) return describeBlock(block);
  const QRect plot = plotRect();
  if (!plot.contains(p) || blocks_->positions() == 0) return {};
  const int position =
      std::clamp(static_cast<int>((p.x() - plot.left()) *
                                  static_cast<double>(blocks_->positions()) / plot.width()),
                 0, blocks_->positions() - 1);
  return tr("%1 (position %2): %3 live")
      .arg(QString::fromStdString(blocks_->lifetimes().describe(cp_->project(), position)))
      .arg(position)
      .arg(bytes_text(blocks_->liveBytes()[static_cast<size_t>(position)]));
}

QSize LifetimeChart::sizeHint() const {
  // No taller than the bands' pane, so the table below keeps its rows.
  return QSize(720, 190);
}

QSize LifetimeChart::minimumSizeHint() const {
  // 60 px of lanes: enough to read, and low enough that the Memory view
  // leaves a bottom dock room for rows at 1280x800.
  return QSize(320, legendHeight() + axisHeight() + 2 * kChartMargin + 60);
}

void LifetimeChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  const QColor base = pal.color(QPalette::Base), text = pal.color(QPalette::Text);
  p.fillRect(rect(), base);
  if (!blocks_) return;
  const QRect plot = plotRect();
  const QFontMetrics fm = fontMetrics();
  const QFont small = small_font(font());
  const QFontMetrics sfm(small);

  // Legend: the figures, then what the colours and lines mean.
  p.setPen(text);
  p.drawText(QRect(kChartMargin, kChartMargin, width() - 2 * kChartMargin, fm.height()),
             Qt::AlignLeft | Qt::AlignVCenter, legendText());
  int x = kChartMargin;
  const int swatchY = kChartMargin + fm.height() + 4;
  bool present[kNumBlockKinds] = {};
  for (const PoolBlock& b : blocks_->blocks()) present[static_cast<int>(b.kind)] = true;
  for (int k = 0; k < kNumBlockKinds; ++k) {
    if (!present[k]) continue;
    const QString name = block_kind_name(static_cast<BlockKind>(k));
    p.fillRect(QRect(x, swatchY + fm.height() / 2 - 5, 10, 10),
               kind_colour(static_cast<BlockKind>(k)));
    p.drawText(QPoint(x + 14, swatchY + fm.ascent()), name);
    x += 14 + fm.horizontalAdvance(name) + 14;
  }
  const QBrush hatch(mix(base, text, 0.75), Qt::BDiagPattern);
  if (std::any_of(blocks_->blocks().begin(), blocks_->blocks().end(),
                  [](const PoolBlock& b) { return b.recomputed; })) {
    const QString name = tr("recomputed in the backward");
    const QRect swatch(x, swatchY + fm.height() / 2 - 5, 10, 10);
    p.fillRect(swatch, kind_colour(BlockKind::FeatureFp32));
    p.fillRect(swatch, hatch);
    p.drawText(QPoint(x + 14, swatchY + fm.ascent()), name);
    x += 14 + fm.horizontalAdvance(name) + 14;
  }
  const int lineY = swatchY + fm.height() / 2;
  p.setPen(QPen(text, 1.5));
  p.drawLine(x, lineY, x + 18, lineY);
  const QString poolName = blocks_->packed() ? tr("pool") : tr("span");
  p.drawText(QPoint(x + 22, swatchY + fm.ascent()), poolName);
  x += 22 + fm.horizontalAdvance(poolName) + 14;
  p.setPen(QPen(text, 1.5, Qt::DashLine));
  p.drawLine(x, lineY, x + 18, lineY);
  p.setPen(text);
  p.drawText(QPoint(x + 22, swatchY + fm.ascent()), tr("peak live"));
  const QColor budgetColour(0xc6, 0x28, 0x28);
  if (budgetInPool() > 0) {
    x += 22 + fm.horizontalAdvance(tr("peak live")) + 14;
    p.setPen(QPen(budgetColour, 1.5, Qt::DashDotLine));
    p.drawLine(x, lineY, x + 18, lineY);
    p.setPen(text);
    p.drawText(QPoint(x + 22, swatchY + fm.ascent()), tr("memory budget"));
  }

  // Grid: a line per byte tick and at every graph's start.
  const QColor grid = mix(base, text, 0.14);
  p.setFont(small);
  for (uint64_t y : yTicks_) {
    const double py = yAt(static_cast<double>(y));
    p.setPen(grid);
    p.drawLine(QPointF(plot.left(), py), QPointF(plot.right(), py));
    p.setPen(text);
    p.drawText(QRectF(kChartMargin, py - sfm.height() / 2.0, axisLabelWidth() - 6, sfm.height()),
               Qt::AlignRight | Qt::AlignVCenter, bytes_text(y));
  }
  p.setPen(grid);
  for (const GraphTick& t : ticks_) {
    const double px = xAt(t.position);
    p.drawLine(QPointF(px, plot.top()), QPointF(px, plot.bottom()));
  }
  p.setPen(text);
  for (const GraphTick& t : ticks_) {
    const double px = xAt(t.position);
    p.drawLine(QPointF(px, plot.bottom()), QPointF(px, plot.bottom() + 4));
  }
  for (const TickLabel& l : labels_) {
    const double px = xAt(ticks_[static_cast<size_t>(l.tick)].position);
    // A name beside its tick hangs from it; a centred one sits under its span.
    if (!l.centred) p.drawLine(QPointF(px, plot.bottom()), QPointF(px, l.rect.center().y()));
    // Unclipped: a small font's underscores fall below its line height.
    p.drawText(l.rect, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
               ticks_[static_cast<size_t>(l.tick)].name);
  }
  p.setFont(font());

  // The blocks: a pixel of base between neighbours where they are big enough.
  p.setClipRect(plot.adjusted(0, -1, 1, 1));
  for (size_t i = 0; i < rects_.size(); ++i) {
    const QRectF& r = rects_[i];
    QColor c = kind_colour(blocks_->blocks()[i].kind);
    if (isFaded(static_cast<int>(i))) c = mix(base, c, 0.25);
    const QRectF inside = r.width() > 3 && r.height() > 3 ? r.adjusted(0, 0, -1, -1) : r;
    p.fillRect(inside, c);
    if (blocks_->blocks()[i].recomputed) p.fillRect(inside, hatch);
  }
  p.setBrush(Qt::NoBrush);
  if (hovered_ >= 0) {
    p.setPen(QPen(text, 1, Qt::DashLine));
    for (int i : hoveredShares_) p.drawRect(rects_[static_cast<size_t>(i)].adjusted(0, 0, -1, -1));
    p.setPen(QPen(text, 1.5));
    p.drawRect(rects_[static_cast<size_t>(hovered_)].adjusted(0, 0, -1, -1));
  }
  if (const int s = blocks_->indexOf(selected_); s >= 0) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 2.5));
    p.drawRect(rects_[static_cast<size_t>(s)].adjusted(-1, -1, 0, 0));
  }
  p.setClipping(false);

  // The pool's size and the floor any packing has: the most bytes live at once.
  const double poolY = yAt(static_cast<double>(blocks_->bytes()));
  const double peakY = yAt(static_cast<double>(blocks_->peakLiveBytes()));
  p.setPen(QPen(text, 1.5));
  p.drawLine(QPointF(plot.left(), poolY), QPointF(plot.right(), poolY));
  p.setPen(QPen(text, 1.5, Qt::DashLine));
  p.drawLine(QPointF(plot.left(), peakY), QPointF(plot.right(), peakY));
  p.setPen(text);
  p.setFont(small);
  p.drawText(QRectF(plot.left(), poolY - sfm.height() - 1, plot.width() - 4, sfm.height()),
             Qt::AlignRight | Qt::AlignVCenter,
             tr("%1 %2").arg(poolName, bytes_text(blocks_->bytes())));
  // The budget less what lies outside the pool: the pool's share of it.
  if (const uint64_t room = budgetInPool(); room > 0) {
    const double budgetY = yAt(static_cast<double>(room));
    p.setPen(QPen(budgetColour, 1.5, Qt::DashDotLine));
    p.drawLine(QPointF(plot.left(), budgetY), QPointF(plot.right(), budgetY));
    p.setPen(budgetColour);
    p.drawText(QRectF(plot.left() + 4, budgetY - sfm.height() - 1, plot.width() - 8, sfm.height()),
               Qt::AlignLeft | Qt::AlignVCenter,
               tr("budget %1 a device: %2 for the pool")
                   .arg(bytes_text(cp_->memory_budget()), bytes_text(room)));
  }
  p.setFont(font());
  p.setPen(mix(base, text, 0.5));
  p.drawRect(plot.adjusted(0, 0, -1, -1));
}

void LifetimeChart::setHighlightedLayers(std::vector<int> layers) {
  highlighted_ = std::move(layers);
  update();
}

bool LifetimeChart::isFaded(int block) const {
  if (highlighted_.empty() || !blocks_ || !cp_ || block < 0 ||
      static_cast<size_t>(block) >= blocks_->blocks().size())
    return false;
  const DTensor& t = cp_->plans()[static_cast<size_t>(blocks_->variant())].get_dtensor(
      blocks_->blocks()[static_cast<size_t>(block)].id);
  return std::find(highlighted_.begin(), highlighted_.end(), t.owner) == highlighted_.end();
}

void LifetimeChart::resizeEvent(QResizeEvent* event) {
  relayout();
  QWidget::resizeEvent(event);
}

void LifetimeChart::changeEvent(QEvent* event) {
  if (event->type() == QEvent::FontChange) relayout();
  QWidget::changeEvent(event);
}

void LifetimeChart::setHovered(int block) {
  if (block == hovered_) return;
  hovered_ = block;
  hoveredShares_ = block >= 0 && blocks_ ? blocks_->sharing(block) : std::vector<int>{};
  update();
}

void LifetimeChart::mouseMoveEvent(QMouseEvent* event) {
  const QPoint pt = event->position().toPoint();
  setHovered(blockAt(pt));
  emit hovered(describeAt(pt).replace(QLatin1Char('\n'), QStringLiteral(" · ")));
}

void LifetimeChart::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !blocks_) return;
  const int block = blockAt(event->position().toPoint());
  if (block < 0) return;
  const DTensorId id = blocks_->blocks()[static_cast<size_t>(block)].id;
  setSelectedTensor(id);
  emit tensorClicked(id);
}

void LifetimeChart::mouseDoubleClickEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton || !blocks_) return;
  const int block = blockAt(event->position().toPoint());
  if (block >= 0) emit tensorActivated(blocks_->blocks()[static_cast<size_t>(block)].id);
}

void LifetimeChart::leaveEvent(QEvent* event) {
  setHovered(-1);
  emit hovered(QString());
  QWidget::leaveEvent(event);
}

bool LifetimeChart::event(QEvent* event) {
  if (show_hover_tooltip(this, event, [this](QPoint p) { return describeAt(p); })) return true;
  return QWidget::event(event);
}

}  // namespace tr::gui

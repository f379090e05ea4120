// SPDX-License-Identifier: GPL-3.0-or-later
#include "dataset/sample_grid.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>

namespace tr::gui {

namespace {

constexpr int kGap = 8;
// A cell is as wide as its widest caption up to this (CIFAR-100's
// "aquarium_fish" included); longer folder names are cut with an ellipsis.
constexpr int kMaxCaptionWidth = 160;

}  // namespace

SampleGrid::SampleGrid(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
}

void SampleGrid::setCells(std::vector<Cell> cells) {
  cells_ = std::move(cells);
  updateGeometry();
  update();
}

int SampleGrid::imageSide() const {
  int side = 0;
  for (const Cell& c : cells_) side = std::max({side, c.image.width(), c.image.height()});
  if (side == 0) return 0;
  // Enlarged by a whole factor up to about 84 pixels; large images shrink to 112.
  if (side >= 112) return 112;
  return side * std::max(1, 84 / side);
}

int SampleGrid::captionWidth() const {
  int widest = 0;
  for (const Cell& c : cells_)
    widest = std::max(widest, fontMetrics().horizontalAdvance(c.caption));
  return std::min(widest + 4, kMaxCaptionWidth);
}

QSize SampleGrid::cellSize() const {
  const int side = imageSide();
  return {std::max({side, 72, captionWidth()}), side + fontMetrics().height() + 4};
}

QStringList SampleGrid::cutCaptions() const {
  QStringList cut;
  const int width = cellSize().width();
  for (const Cell& c : cells_)
    if (fontMetrics().horizontalAdvance(c.caption) > width && !cut.contains(c.caption))
      cut << c.caption;
  return cut;
}

int SampleGrid::columns(int width) const {
  return std::max(1, (width + kGap) / (cellSize().width() + kGap));
}

int SampleGrid::heightForWidth(int width) const {
  if (cells_.empty()) return 0;
  const int rows = (cellCount() + columns(width) - 1) / columns(width);
  return rows * (cellSize().height() + kGap);
}

QSize SampleGrid::sizeHint() const {
  const int w = 8 * (cellSize().width() + kGap);
  return {w, heightForWidth(w)};
}

void SampleGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const int side = imageSide();
  const QSize cell = cellSize();
  const int cols = columns(width());
  for (int i = 0; i < cellCount(); ++i) {
    const Cell& c = cells_[static_cast<size_t>(i)];
    const QPoint at((i % cols) * (cell.width() + kGap), (i / cols) * (cell.height() + kGap));
    const QImage shown =
        c.image.scaled(side, side, Qt::KeepAspectRatio,
                       c.image.width() < side ? Qt::FastTransformation : Qt::SmoothTransformation);
    p.drawImage(at + QPoint((cell.width() - shown.width()) / 2, 0), shown);
    const QRect text(at.x(), at.y() + side + 2, cell.width(), fontMetrics().height());
    p.drawText(text, Qt::AlignHCenter | Qt::AlignTop,
               fontMetrics().elidedText(c.caption, Qt::ElideRight, cell.width()));
  }
}

}  // namespace tr::gui

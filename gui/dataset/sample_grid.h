// SPDX-License-Identifier: GPL-3.0-or-later
// SampleGrid: images in rows that fill the width, each with its class name
// under it; small images are shown enlarged, without smoothing, so their
// pixels stay visible.
#pragma once

#include <QImage>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <vector>

namespace tr::gui {

class SampleGrid : public QWidget {
  Q_OBJECT

 public:
  explicit SampleGrid(QWidget* parent = nullptr);

  struct Cell {
    QImage image;
    QString caption;
  };
  void setCells(std::vector<Cell> cells);
  int cellCount() const { return static_cast<int>(cells_.size()); }
  const Cell& cell(int i) const { return cells_[static_cast<size_t>(i)]; }
  // Captions too long for a cell, cut with an ellipsis (names past 160 pixels).
  QStringList cutCaptions() const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QSize cellSize() const;  // image side plus caption
  int captionWidth() const;
  int columns(int width) const;
  int imageSide() const;

  std::vector<Cell> cells_;
};

}  // namespace tr::gui

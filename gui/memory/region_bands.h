// SPDX-License-Identifier: GPL-3.0-or-later
// RegionBands: one variant's MemoryPlan drawn to scale. A strip at the top
// is the whole arena, one segment per band in address order; below, one row
// per band with its bytes, share and offset. A band is a region, or in a
// packed plan the step-local pool (pool_band.h) that stands for the F and T
// regions sharing its bytes. Linear or logarithmic widths (small regions
// vanish in linear). Hovering names the band and, on the strip, the
// DTensor(s) under the cursor; clicking selects them. The tensors of
// highlighted model nodes are marked on the strip and their bands' rows
// flagged (the designer's selection, linked).
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include <renaissance/compiled_plan.h>
#include "pool_band.h"

namespace tr::gui {

class PoolBlocks;

class RegionBands : public QWidget {
  Q_OBJECT

 public:
  enum class Scale { Linear, Log };

  explicit RegionBands(QWidget* parent = nullptr);

  // Shares the plan's ownership, so the bands never outlive it; null clears
  // the view. A packed plan's pool asks `blocks` (built here when null)
  // which tensors hold an address.
  void setPlan(std::shared_ptr<const CompiledPlan> cp, int variant,
               std::shared_ptr<const PoolBlocks> blocks = nullptr);
  void setScale(Scale scale);
  Scale scale() const { return scale_; }
  // Band numbers: a region's index, or kPoolBand; -1 for none.
  void setSelectedRegion(int band);
  int selectedRegion() const { return selected_; }
  void setHighlightedLayers(std::vector<int> layers);
  // The tensors of the highlighted layers in this variant, in address order.
  const std::vector<DTensorId>& highlightedTensors() const { return marked_; }
  // Where a tensor lies on the strip (empty when its band is not shown).
  QRectF tensorMark(DTensorId id) const;

  // Bands drawn (regions holding tensors, then a packed plan's pool), in
  // address order.
  const std::vector<int>& shownBands() const { return shown_; }
  bool showsPool() const;
  QRect stripRect() const;
  QRectF segmentRect(int band) const;  // the band's part of the strip; empty when not shown
  QRect rowRect(int band) const;       // the band's whole row; empty when not shown
  QRect barRect(int band) const;       // the filled part of the band
  QRect rowRect(Region r) const { return rowRect(region_index(r)); }
  QRect barRect(Region r) const { return barRect(region_index(r)); }
  int regionAt(QPoint p) const;  // the band under `p`, -1 when none
  // On the strip only. In the pool several tensors hold the same bytes at
  // different times: all of them, by first use; tensorAt gives the first.
  std::vector<DTensorId> tensorsAt(QPoint p) const;
  DTensorId tensorAt(QPoint p) const;
  QString describeAt(QPoint p) const;  // the hover text

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void regionClicked(int region);
  void tensorClicked(DTensorId id);
  void hovered(const QString& text);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct Segment {
    int band;
    double x0, x1;  // on the strip
  };
  const MemoryPlan* plan() const;
  uint64_t bandOffset(int band) const;
  uint64_t bandBytes(int band) const;
  double weight(uint64_t bytes) const;
  void layoutStrip();
  void collectMarks();
  int labelWidth() const;

  std::shared_ptr<const CompiledPlan> cp_;
  std::shared_ptr<const PoolBlocks> blocks_;  // packed plans only
  int variant_ = 0;
  Scale scale_ = Scale::Linear;
  int selected_ = -1, hovered_ = -1;
  std::vector<int> shown_;
  std::vector<Segment> segments_;
  std::vector<int> layers_;
  std::vector<DTensorId> marked_;
};

}  // namespace tr::gui

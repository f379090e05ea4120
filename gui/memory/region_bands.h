// SPDX-License-Identifier: GPL-3.0-or-later
// RegionBands: one variant's MemoryPlan drawn to scale. A strip at the top
// is the whole arena, one segment per region in address order; below, one
// band per region with its bytes, share and offset. Linear or logarithmic
// widths (small regions vanish in linear). Hovering names the region and, on
// the strip, the DTensor under the cursor; clicking selects them. The
// tensors of highlighted model nodes are marked on the strip and their
// regions' rows flagged (the designer's selection, linked).
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "compile/compiler.h"

namespace tr::gui {

class RegionBands : public QWidget {
  Q_OBJECT

 public:
  enum class Scale { Linear, Log };

  explicit RegionBands(QWidget* parent = nullptr);

  // Shares the plan's ownership, so the bands never outlive it; null clears
  // the view.
  void setPlan(std::shared_ptr<const CompiledProject> cp, int variant);
  void setScale(Scale scale);
  Scale scale() const { return scale_; }
  void setSelectedRegion(int region);
  int selectedRegion() const { return selected_; }
  void setHighlightedLayers(std::vector<int> layers);
  // The tensors of the highlighted layers in this variant, in address order.
  const std::vector<DTensorId>& highlightedTensors() const { return marked_; }
  // Where a tensor lies on the strip (empty when its region is not shown).
  QRectF tensorMark(DTensorId id) const;

  // Regions drawn (those holding tensors), in address order.
  const std::vector<Region>& shownRegions() const { return shown_; }
  QRect stripRect() const;
  QRect rowRect(Region r) const;       // the band's whole row; empty when not shown
  QRect barRect(Region r) const;       // the filled part of the band
  int regionAt(QPoint p) const;        // -1 when none
  DTensorId tensorAt(QPoint p) const;  // on the strip only
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
    Region region;
    double x0, x1;  // on the strip
  };
  const MemoryPlan* plan() const;
  double weight(uint64_t bytes) const;
  void layoutStrip();
  void collectMarks();
  int labelWidth() const;

  std::shared_ptr<const CompiledProject> cp_;
  int variant_ = 0;
  Scale scale_ = Scale::Linear;
  int selected_ = -1, hovered_ = -1;
  std::vector<Region> shown_;
  std::vector<Segment> segments_;
  std::vector<int> layers_;
  std::vector<DTensorId> marked_;
};

}  // namespace tr::gui

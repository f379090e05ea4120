// SPDX-License-Identifier: GPL-3.0-or-later
// LifetimeChart: one variant's step-local pool over one step, worked out
// before any run (like PyTorch's memory_viz "active memory timeline", but in
// address space). x is the step's node order, with a tick where each graph
// starts; y is the byte offset in the pool. Every feature, gradient slot and
// scratch tensor is a block from its first use to past its last at its
// bytes, coloured by kind, so the packing itself shows: blocks never
// overlap, and a column of them is what that node has live. Lines mark the
// pool's size and the most bytes ever live at once, and the memory budget's
// share of the pool where the plan has one; outputs computed again in the
// backward to meet it are hatched. Hovering names a block
// and the tensors it shares bytes with; clicking one reports it, and the
// selected tensor's block is outlined. Rectangles are laid out once per plan
// and size, not per paint, so a ResNet-50's 1400 tensors stay fluid.
#pragma once

#include <QRectF>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

#include <renaissance/compiled_plan.h>

namespace tr::gui {

class PoolBlocks;

class LifetimeChart : public QWidget {
  Q_OBJECT

 public:
  struct GraphTick {
    int position = 0;  // where the graph's first node is in the step
    QString name;      // "DEEP_FWD_BWD"
  };

  explicit LifetimeChart(QWidget* parent = nullptr);
  ~LifetimeChart() override;

  // Graph names drawn over one another, or crossed by another's tick line
  // (none once laid out; for the readability checks).
  QStringList crossedLabels() const;

  // Shares the plan's ownership; null clears. `blocks` is built here when
  // null or for another variant.
  void setPlan(std::shared_ptr<const CompiledPlan> cp, int variant,
               std::shared_ptr<const PoolBlocks> blocks = nullptr);
  const PoolBlocks* blocks() const { return blocks_.get(); }
  // Outlines the tensor's block (kNoTensor, or a tensor with none: no outline).
  void setSelectedTensor(DTensorId id);
  DTensorId selectedTensor() const { return selected_; }
  // The layers selected elsewhere (the designer): their tensors' blocks keep
  // their colour, the others fade. Empty: none fades.
  void setHighlightedLayers(std::vector<int> layers);
  bool isFaded(int block) const;

  const std::vector<GraphTick>& graphTicks() const { return ticks_; }
  // "pool 8.09 MiB, peak live 8.04 MiB, 14.37 MiB before packing"
  QString legendText() const;
  QRect plotRect() const;
  double xAt(double position) const;
  double yAt(double bytes) const;     // bytes from the pool's start
  QRectF blockRect(int block) const;  // in pixels, as drawn
  int blockAt(QPoint p) const;        // -1 when none
  QString describeBlock(int block) const;
  QString describeAt(QPoint p) const;

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void tensorClicked(DTensorId id);
  void tensorActivated(DTensorId id);  // double-clicked
  void hovered(const QString& text);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;

 private:
  struct TickLabel {
    QRect rect;
    int tick;
    bool centred;  // under its graph's span, not beside its start
    int line;      // x of its tick; a name beside its tick hangs from it by a line
  };
  int legendHeight() const;
  int axisHeight() const;
  int axisLabelWidth() const;
  double yMax() const;
  // The memory budget's bytes for the pool (the budget less every region
  // before it); 0 without a budget, or unpacked.
  uint64_t budgetInPool() const;
  void relayout();
  void setHovered(int block);
  QString lifetimeText(int block) const;

  std::shared_ptr<const CompiledPlan> cp_;
  std::shared_ptr<const PoolBlocks> blocks_;
  std::vector<GraphTick> ticks_;
  // Laid out by relayout(): per block, and the tick labels that have room.
  std::vector<QRectF> rects_;
  std::vector<TickLabel> labels_;
  std::vector<uint64_t> yTicks_;
  DTensorId selected_ = kNoTensor;
  std::vector<int> highlighted_;
  int hovered_ = -1;
  std::vector<int> hoveredShares_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// What a view cuts short at its size, for the 1280x800 journeys: an item
// view's header sections and cells whose text its delegate must elide, and
// a plot's tick labels that overlap one another or run off the widget. Each
// line names where, the widget and the text.
#pragma once

#include <qcustomplot.h>
#include <QAbstractItemView>
#include <QHeaderView>
#include <QStringList>
#include <QStyle>
#include <QTableView>
#include <algorithm>
#include <vector>

namespace tr::test {

// A header's text may take two lines ("Run 3\nlenet-fashion").
inline int widest_line(const QFontMetrics& fm, const QString& text) {
  int widest = 0;
  for (const QString& line : text.split(QLatin1Char('\n')))
    widest = std::max(widest, fm.horizontalAdvance(line));
  return widest;
}

inline QStringList cut_in_item_view(const QAbstractItemView* view, const QString& where) {
  QStringList cut;
  const QAbstractItemModel* m = view->model();
  if (!m) return cut;
  const QString name = view->objectName().isEmpty()
                           ? QString::fromLatin1(view->metaObject()->className())
                           : view->objectName();
  const QRect shown = view->viewport()->rect();
  // Headers: a section's text with the style's margins (and the sort mark).
  if (const auto* table = qobject_cast<const QTableView*>(view)) {
    for (const QHeaderView* h : {table->horizontalHeader(), table->verticalHeader()}) {
      if (h->isHidden()) continue;
      const int margin = 2 * h->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h);
      for (int i = 0; i < h->count(); ++i) {
        if (h->isSectionHidden(i)) continue;
        const int at = h->sectionViewportPosition(i);
        const int size = h->sectionSize(i);
        const int extent = h->orientation() == Qt::Horizontal ? shown.width() : shown.height();
        if (at + size <= 0 || at >= extent) continue;  // scrolled out of view
        const QString text = m->headerData(i, h->orientation()).toString();
        if (text.isEmpty()) continue;
        const int needWidth = widest_line(QFontMetrics(h->font()), text) + margin;
        const int has = h->orientation() == Qt::Horizontal ? size : h->width();
        if (has < needWidth)
          cut << QStringLiteral("%1: %2 header '%3' has %4 of %5 px")
                     .arg(where, name, text)
                     .arg(has)
                     .arg(needWidth);
      }
    }
  } else if (const auto* tree = qobject_cast<const QTreeView*>(view);
             tree && !tree->isHeaderHidden()) {
    const QHeaderView* h = tree->header();
    const int margin = 2 * h->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h);
    for (int i = 0; i < h->count(); ++i) {
      if (h->isSectionHidden(i)) continue;
      const QString text = m->headerData(i, Qt::Horizontal).toString();
      const int at = h->sectionViewportPosition(i);
      if (text.isEmpty() || at + h->sectionSize(i) <= 0 || at >= shown.width()) continue;
      const int need = widest_line(QFontMetrics(h->font()), text) + margin;
      if (h->sectionSize(i) < need)
        cut << QStringLiteral("%1: %2 header '%3' has %4 of %5 px")
                   .arg(where, name, text)
                   .arg(h->sectionSize(i))
                   .arg(need);
    }
  }
  // Cells in view: the delegate's size for the text against the cell's.
  const QModelIndex first = view->indexAt(shown.topLeft() + QPoint(1, 1));
  if (!first.isValid()) return cut;
  std::vector<QModelIndex> rows;
  for (QModelIndex i = first; i.isValid() && rows.size() < 400;) {
    const QRect r = view->visualRect(i);
    if (r.top() > shown.bottom()) break;
    rows.push_back(i);
    const QModelIndex next = view->indexAt(QPoint(r.left() + 1, r.bottom() + 2));
    if (!next.isValid() || next == i) break;
    i = next;
  }
  const QFontMetrics fm = view->fontMetrics();
  const int margin =
      2 * (view->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, view) + 1);
  for (const QModelIndex& row : rows) {
    for (int c = 0; c < m->columnCount(row.parent()); ++c) {
      const QModelIndex i = m->index(row.row(), c, row.parent());
      const QString text = i.data(Qt::DisplayRole).toString();
      const QRect r = view->visualRect(i);
      if (text.isEmpty() || r.isEmpty() || r.right() < 0 || r.left() > shown.right()) continue;
      int need = view->sizeHintForIndex(i).width();
      if (r.height() >= 2 * fm.height()) {
        // A cell lines high wraps its text at spaces: cut when a word is
        // wider than the cell, or the lines are more than it holds.
        const QRect wrapped =
            fm.boundingRect(QRect(0, 0, r.width() - margin, 100000), Qt::TextWordWrap, text);
        if (wrapped.width() <= r.width() - margin && wrapped.height() <= r.height()) continue;
        need = wrapped.width() + margin;
      }
      if (r.width() + 1 < need)
        cut << QStringLiteral("%1: %2 cell (%3, %4) '%5' has %6 of %7 px")
                   .arg(where, name)
                   .arg(i.row())
                   .arg(c)
                   .arg(text.left(40))
                   .arg(r.width())
                   .arg(need);
    }
  }
  return cut;
}

inline QStringList overlapping_ticks(const QCustomPlot* plot, const QString& where) {
  QStringList cut;
  for (int r = 0; r < plot->axisRectCount(); ++r) {
    for (QCPAxis* axis : plot->axisRect(r)->axes()) {
      if (!axis->visible() || !axis->tickLabels() || axis->tickLabelRotation() != 0) continue;
      const QVector<double> ticks = axis->tickVector();
      const QVector<QString> labels = axis->tickVectorLabels();
      const QFontMetrics fm(axis->tickLabelFont());
      const bool across = axis->orientation() == Qt::Horizontal;
      struct Label {
        double centre;  // pixels along the axis
        int extent;
        QString text;
        bool operator<(const Label& o) const { return centre < o.centre; }
      };
      std::vector<Label> at;
      for (int i = 0; i < ticks.size() && i < labels.size(); ++i) {
        if (!axis->range().contains(ticks[i])) continue;
        at.push_back({axis->coordToPixel(ticks[i]),
                      across ? fm.horizontalAdvance(labels[i]) : fm.height(), labels[i]});
      }
      std::sort(at.begin(), at.end());
      const QString axisName = across ? QStringLiteral("x") : QStringLiteral("y");
      for (size_t i = 0; i + 1 < at.size(); ++i)
        if (at[i + 1].centre - at[i].centre < (at[i].extent + at[i + 1].extent) / 2.0 + 2)
          cut << QStringLiteral("%1: plot '%2' %3 axis labels '%4' and '%5' overlap")
                     .arg(where, plot->objectName(), axisName, at[i].text, at[i + 1].text);
      const int side = across ? plot->width() : plot->height();
      for (const Label& l : at)
        if (l.centre - l.extent / 2.0 < -1 || l.centre + l.extent / 2.0 > side + 1)
          cut << QStringLiteral("%1: plot '%2' %3 axis label '%4' runs off the plot")
                     .arg(where, plot->objectName(), axisName, l.text);
    }
  }
  return cut;
}

}  // namespace tr::test

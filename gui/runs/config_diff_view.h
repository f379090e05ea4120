// SPDX-License-Identifier: GPL-3.0-or-later
// ConfigDiffView: the Compare tab's table of configuration differences: a
// tree of groups (see ConfigDiffModel) with a filter box: the setting names
// whole, the runs' columns sharing the width they leave, long values elided
// with the whole value in their tooltip.
#pragma once

#include <QWidget>

#include <renaissance/run_compare.h>

class QLineEdit;
class QSortFilterProxyModel;
class QTreeView;

namespace tr::gui {

class ConfigDiffModel;

class ConfigDiffView : public QWidget {
  Q_OBJECT

 public:
  explicit ConfigDiffView(QWidget* parent = nullptr);

  void setComparison(const store::RunComparison& comparison);
  void clear();

  // Groups with more setting rows than this start collapsed (unless alone),
  // so the other groups stay in sight; their row still gives the count.
  static constexpr int kOpenGroupRows = 12;

  // For tests and screenshots.
  ConfigDiffModel* model() const { return model_; }
  QSortFilterProxyModel* filtered() const { return proxy_; }
  QTreeView* tree() const { return tree_; }
  QLineEdit* filterEdit() const { return filter_; }

 private:
  void expandAsDefault();
  void filterChanged(const QString& text);
  void fitColumns();

  ConfigDiffModel* model_;
  QSortFilterProxyModel* proxy_;
  QLineEdit* filter_;
  QTreeView* tree_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// ProblemsPanel: every problem of the design (live shape analysis) and of the
// last compile, one row each with the node it names; activating a row asks
// for that node to be selected in the designer.
#pragma once

#include <QTreeWidget>
#include <vector>

#include "core/error.h"

namespace tr::gui {

class ProblemsPanel : public QTreeWidget {
  Q_OBJECT

 public:
  explicit ProblemsPanel(QWidget* parent = nullptr);

  void setDesignProblems(const std::vector<Diagnostic>& problems);
  // Problems the compiler reported (empty after a successful compile).
  void setCompileProblems(const std::vector<Diagnostic>& problems);
  int problemCount() const { return topLevelItemCount(); }

 signals:
  void nodeRequested(const QString& nodeId);
  void countChanged(int count);

 private:
  void rebuild();

  std::vector<Diagnostic> design_, compile_;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// ProblemsPanel: every problem of the design (live shape analysis), of the
// last compile and of the training set-up (dataset, batch, memory fit), one
// row each with the node and field it names. Problems that block training
// carry the error icon, notes that do not the warning icon. Activating a
// row asks for that node and field (or that training setting) to be shown.
#pragma once

#include <QTreeWidget>
#include <functional>
#include <vector>

#include <renaissance/error.h>

namespace tr::gui {

class ProblemsPanel : public QTreeWidget {
  Q_OBJECT

 public:
  explicit ProblemsPanel(QWidget* parent = nullptr);

  void setDesignProblems(const std::vector<Diagnostic>& problems);
  // Problems the compiler reported (empty after a successful compile).
  void setCompileProblems(const std::vector<Diagnostic>& problems);
  // What stops a sound design from training (blocking), and what the user
  // should know but may train with (notes).
  void setTrainingProblems(const std::vector<Diagnostic>& blocking,
                           const std::vector<Diagnostic>& notes);
  int problemCount() const { return topLevelItemCount(); }
  // How the Field column names a key ("params.kernel" -> "Kernel"); the key
  // itself shows in the tooltip. Unset or empty answer: the key.
  void setFieldNamer(std::function<QString(const QString& key)> namer);
  // Rows that block training.
  int blockingCount() const;
  bool isBlocking(int row) const;
  // The field a row names, as the project file spells it ("params.kernel").
  QString fieldKey(int row) const;

 signals:
  // A row naming a node was activated; `field` ("params.kernel") may be empty.
  void nodeRequested(const QString& nodeId, const QString& field);
  // A row naming a training setting ("training.global_batch") was activated.
  void settingRequested(const QString& field);
  void countChanged(int count);

 private:
  void rebuild();
  void activate(QTreeWidgetItem* item);

  std::vector<Diagnostic> design_, compile_, training_, notes_;
  std::function<QString(const QString&)> namer_;
};

}  // namespace tr::gui

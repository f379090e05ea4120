// SPDX-License-Identifier: GPL-3.0-or-later
// PropertiesPanel: the selected layer's id and parameters as editable fields
// (every change an undoable command), with its output shape, parameter
// count, FLOPs and problems; with nothing selected, the project's totals.
#pragma once

#include <QWidget>
#include <functional>
#include <vector>

#include <renaissance/project.h>

class QCheckBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace tr::gui {

class ModelEditor;
class ProjectDocument;

class PropertiesPanel : public QWidget {
  Q_OBJECT

 public:
  PropertiesPanel(ProjectDocument* doc, ModelEditor* editor, QWidget* parent = nullptr);

  int node() const { return node_; }
  // The editor of a field ("id", "params.out_channels", "params.bias"...), or null.
  QWidget* fieldEditor(const QString& key) const;
  // The shapes, parameters and cost shown under the title (or why not).
  QString infoText() const;
  // Applies what is typed but not committed yet (a field that still has the
  // focus commits on Enter or when left).
  void commitPendingEdits();

 public slots:
  void showNode(int index);

 private:
  enum class Kind { Int, Real, Bool };
  struct Field {
    QString key;    // "params.kernel_h"
    QString label;  // "Kernel height"
    Kind kind = Kind::Int;
    double min = 0, max = 0;
    std::function<double(const LayerParams&)> get;
    std::function<void(LayerParams&, double)> set;
    QWidget* editor = nullptr;
  };

  void rebuildForm();
  void refreshValues();
  void refreshInfo();
  void commitId();
  void commitParam(const Field& field, double value);

  ProjectDocument* doc_;
  ModelEditor* editor_;
  int node_ = -1;
  QLabel* title_;
  QWidget* formHost_;
  QFormLayout* form_ = nullptr;
  QLineEdit* idEdit_ = nullptr;
  QLabel* idError_ = nullptr;
  QLabel* info_;
  QLabel* problems_;
  std::vector<Field> fields_;
};

}  // namespace tr::gui

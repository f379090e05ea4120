// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSettingsPanel: every setting of a project outside its model graph
// (name and description, optimizer, schedule, run length, precision and
// ranks, the dataset: its kind, folder or generated shape, augmentation and
// normalisation) as a form bound to the
// ProjectDocument. Each change is one undoable SetTrainingCommand; a value
// the loader would refuse is kept in its field with the loader's reason
// beside it and is not applied.
#pragma once

#include <QString>
#include <QVariant>
#include <QWidget>
#include <deque>
#include <functional>

#include <renaissance/dataset_probe.h>
#include <renaissance/setting_spec.h>
#include "project_document.h"

class QFormLayout;
class QLabel;
class QLineEdit;

namespace tr::gui {

class TrainingSettingsPanel : public QWidget {
  Q_OBJECT

 public:
  explicit TrainingSettingsPanel(ProjectDocument* doc, QWidget* parent = nullptr);

  // The editor of a field, named by its key in the project file ("name",
  // "training.optimizer.lr", "training.ema.enabled", "dataset.mean"...), or null.
  QWidget* fieldEditor(const QString& key) const;
  // What the form calls that field ("Learning rate"), or empty.
  // Where the Browse… of the path field `key` starts: its path; when empty,
  // where the dataset kind is looked for, beside the image folder's other
  // folder, the project's folder (not a sample's), else home; never the
  // folder the workbench was started in.
  QString browseStart(const QString& key) const;
  QString fieldLabel(const QString& key) const;
  // As wide as the widest row needs (rows scroll vertically, never sideways).
  QSize minimumSizeHint() const override;
  // The message shown under that field: why what was typed is not applied,
  // or why the project's own value would not load. Empty when none.
  QString fieldMessage(const QString& key) const;

 public slots:
  // Applies what is typed but not committed yet (a spin box or line edit
  // that still has the focus: they commit on Enter or when left), so a save
  // or a run started from a menu or shortcut sees it.
  void commitPendingEdits();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  enum class Kind { Int, Real, Bool, Choice, Text, Seed, List, Names };
  struct Field {
    QString key;                        // "training.optimizer.lr": also the editor's object name
    const SettingSpec* spec = nullptr;  // its row in the settings table; null: name, description
    QString what;                       // "learning rate", for the undo step's text
    QString label;                      // "Learning rate", as the form shows it
    Kind kind = Kind::Int;
    QWidget* editor = nullptr;
    QWidget* row = nullptr;  // editor and message: one row of `form`
    QFormLayout* form = nullptr;
    QLabel* message = nullptr;
    QLabel* name = nullptr;  // the label; a row of its own above `row` when `above`
    bool above = false;
    std::function<QVariant(const ProjectSettings&)> get;
    std::function<void(ProjectSettings&, const QVariant&)> set;
    // A check that involves other settings, with the loader's message; null when none.
    std::function<QString(const ProjectSettings&)> check;
    // Whether the field means anything with these settings; null: always.
    std::function<bool(const ProjectSettings&)> applies;
    bool refused = false;  // the editor holds a value the document did not take
  };

  Field& addField(QFormLayout* form, Kind kind, QWidget* editor, const QString& key,
                  const QString& label, const QString& what, const QString& tip);
  void buildForm(QWidget* host);
  // A field for a row of the settings table, in `form`.
  void addSetting(QFormLayout* form, const SettingSpec& spec);
  void refresh(bool reset);
  void commit(Field& field);
  // The editor's value; false with `why` set when its text is not one.
  bool readEditor(const Field& field, QVariant& value, QString& why) const;
  void writeEditor(const Field& field, const QVariant& value);
  void updateMessage(Field& field, const ProjectSettings& now);
  void showMessage(Field& field, const QString& text);
  const Field* find(const QString& key) const;
  // Puts `extra` (a Browse button) on the editor's line.
  void besideEditor(Field& field, QWidget* extra);
  // The label on a row of its own, so the editor (a path) has the panel's
  // whole width instead of what the longest label leaves.
  void labelAbove(Field& field);

  ProjectDocument* doc_;
  std::deque<Field> fields_;  // a deque: connections hold references to its elements
  ProjectSettings shown_;     // what the editors showed after the last refresh
  QLabel* devices_ = nullptr;
  QLabel* dataset_ = nullptr;
  QLineEdit* datasetFolder_ = nullptr;  // its tooltip names where the kind is looked for
  QString datasetFolderTip_;            // the setting's own help, before that
  QLineEdit* classNames_ = nullptr;     // its grey hint says what names the classes without it
  QWidget* host_ = nullptr;             // the form inside the scroll area
  DatasetProbe probe_;                  // the shown settings' dataset, looked at on every refresh
};

}  // namespace tr::gui

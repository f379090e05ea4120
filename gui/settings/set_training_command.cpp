// SPDX-License-Identifier: GPL-3.0-or-later
// SetTrainingCommand: applies a settings snapshot and folds same-field edits.
#include "set_training_command.h"

#include <QCoreApplication>

namespace tr::gui {

namespace {

// The devices are left out: ProjectDocument::setSettings never applies them.
// Every other member counts (a defaulted ==): a field added to the settings
// cannot be forgotten here.
bool same(const ProjectSettings& a, ProjectSettings b) {
  b.training.devices = a.training.devices;
  return a == b;
}

}  // namespace

SetTrainingCommand::SetTrainingCommand(ProjectDocument* doc, ProjectSettings before,
                                       ProjectSettings after, QString field, const QString& label)
    : doc_(doc), before_(std::move(before)), after_(std::move(after)), field_(std::move(field)) {
  setText(QCoreApplication::translate("SetTrainingCommand", "Set %1").arg(label));
}

void SetTrainingCommand::redo() {
  doc_->setSettings(after_);
}

void SetTrainingCommand::undo() {
  undone_ = true;
  doc_->setSettings(before_);
}

bool SetTrainingCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = static_cast<const SetTrainingCommand*>(other);
  if (undone_ || o->field_ != field_) return false;
  after_ = o->after_;
  setObsolete(same(before_, after_));
  return true;
}

}  // namespace tr::gui

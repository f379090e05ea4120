// SPDX-License-Identifier: GPL-3.0-or-later
#include "edit_node_command.h"

#include <QCoreApplication>

#include "designer/param_names.h"
#include "project_document.h"

namespace tr::gui {

namespace {

bool same(const LayerNode& a, const LayerNode& b) {
  return a.id == b.id && a.type == b.type && a.params == b.params;
}

}  // namespace

EditNodeCommand::EditNodeCommand(ProjectDocument* doc, int index, LayerNode before, LayerNode after,
                                 QString field)
    : doc_(doc),
      index_(index),
      before_(std::move(before)),
      after_(std::move(after)),
      field_(std::move(field)) {
  const QString label = param_label(field_);
  setText(
      QCoreApplication::translate("EditNodeCommand", "Set %1 of %2")
          .arg(label.isEmpty() ? field_ : in_sentence(label), QString::fromStdString(before_.id)));
}

void EditNodeCommand::redo() {
  doc_->setNode(index_, after_);
}

void EditNodeCommand::undo() {
  undone_ = true;
  doc_->setNode(index_, before_);
}

bool EditNodeCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = static_cast<const EditNodeCommand*>(other);
  if (undone_ || o->index_ != index_ || o->field_ != field_) return false;
  after_ = o->after_;
  setObsolete(same(before_, after_));
  return true;
}

}  // namespace tr::gui

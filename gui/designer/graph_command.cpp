// SPDX-License-Identifier: GPL-3.0-or-later
#include "graph_command.h"

#include "project_document.h"

namespace tr::gui {

GraphCommand::GraphCommand(ProjectDocument* doc, const QString& text, ModelGraph before,
                           ModelGraph after)
    : doc_(doc), before_(std::move(before)), after_(std::move(after)) {
  setText(text);
}

void GraphCommand::redo() {
  doc_->setGraph(after_);
}

void GraphCommand::undo() {
  doc_->setGraph(before_);
}

}  // namespace tr::gui

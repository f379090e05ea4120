// SPDX-License-Identifier: GPL-3.0-or-later
#include "move_nodes_command.h"

#include <QCoreApplication>
#include <algorithm>

namespace tr::gui {

MoveNodesCommand::MoveNodesCommand(ProjectDocument* doc, int dragSerial,
                                   std::vector<NodePosition> from, std::vector<NodePosition> to)
    : doc_(doc), serial_(dragSerial), from_(std::move(from)), to_(std::move(to)) {
  setText(to_.size() == 1
              ? QCoreApplication::translate("MoveNodesCommand", "Move %1")
                    .arg(QString::fromStdString(
                        doc->project().model.nodes[static_cast<size_t>(to_[0].node)].id))
              : QCoreApplication::translate("MoveNodesCommand", "Move %n layers", nullptr,
                                            static_cast<int>(to_.size())));
}

void MoveNodesCommand::redo() {
  doc_->setPositions(to_);
}

void MoveNodesCommand::undo() {
  doc_->setPositions(from_);
}

bool MoveNodesCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = static_cast<const MoveNodesCommand*>(other);
  if (o->serial_ != serial_) return false;
  // Later steps of the same drag may move nodes this one did not list yet.
  for (const NodePosition& p : o->to_) {
    auto it = std::find_if(to_.begin(), to_.end(),
                           [&](const NodePosition& q) { return q.node == p.node; });
    if (it != to_.end()) {
      *it = p;
    } else {
      to_.push_back(p);
      const auto f = std::find_if(o->from_.begin(), o->from_.end(),
                                  [&](const NodePosition& q) { return q.node == p.node; });
      if (f != o->from_.end()) from_.push_back(*f);
    }
  }
  setObsolete(from_ == to_);
  return true;
}

}  // namespace tr::gui

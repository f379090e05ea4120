// SPDX-License-Identifier: GPL-3.0-or-later
#include "model_editor.h"

#include <renaissance/layer_spec.h>

#include "auto_layout.h"
#include "edit_node_command.h"
#include "graph_command.h"
#include "layer_catalog.h"
#include "model_edits.h"
#include "move_nodes_command.h"
#include "param_names.h"
#include "set_devices_command.h"
#include "widgets/count_text.h"

namespace tr::gui {

namespace {

QString id_of(const ModelGraph& g, int index) {
  return QString::fromStdString(g.nodes[static_cast<size_t>(index)].id);
}

}  // namespace

ModelEditor::ModelEditor(ProjectDocument* doc, QObject* parent) : QObject(parent), doc_(doc) {}

int ModelEditor::addLayer(LayerType type, QPointF pos) {
  const ModelGraph& g = doc_->project().model;
  LayerNode node = default_layer(type);
  node.id = unique_node_id(g, node_id_base(type));
  node.x = pos.x();
  node.y = pos.y();
  node.has_position = true;
  ModelGraph after = g;
  after.nodes.push_back(node);
  const int index = static_cast<int>(after.nodes.size()) - 1;
  doc_->undoStack()->push(new GraphCommand(doc_, tr("Add %1").arg(QString::fromStdString(node.id)),
                                           g, std::move(after)));
  return index;
}

bool ModelEditor::connectPorts(int from, int fromPort, int to, int toPort) {
  const ModelGraph& g = doc_->project().model;
  const int n = static_cast<int>(g.nodes.size());
  if (from < 0 || from >= n || to < 0 || to >= n) {
    emit refused(tr("Cannot connect: no such layer"));
    return false;
  }
  const LayerNode& src = g.nodes[static_cast<size_t>(from)];
  const LayerNode& dst = g.nodes[static_cast<size_t>(to)];
  if (from == to) {
    emit refused(tr("%1 cannot feed itself").arg(QString::fromStdString(src.id)));
    return false;
  }
  if (fromPort < 0 || fromPort >= layer_output_ports(src.type)) {
    emit refused(
        tr("%1 has no output port %2").arg(QString::fromStdString(src.label())).arg(fromPort));
    return false;
  }
  if (toPort < 0 || toPort >= layer_input_ports(dst)) {
    emit refused(
        tr("%1 has no input port %2").arg(QString::fromStdString(dst.label())).arg(toPort));
    return false;
  }
  const int existing = edge_into(g, to, toPort);
  if (existing >= 0) {
    const Edge& e = g.edges[static_cast<size_t>(existing)];
    if (e.from == from && e.from_port == fromPort) return true;  // already so
  }
  bool replaced = false;
  ModelGraph after = with_edge(g, Edge{from, fromPort, to, toPort}, &replaced);
  const QString text = replaced ? tr("Reconnect %1 to %2") : tr("Connect %1 to %2");
  doc_->undoStack()->push(
      new GraphCommand(doc_, text.arg(id_of(g, from), id_of(g, to)), g, std::move(after)));
  return true;
}

bool ModelEditor::removeItems(const std::vector<int>& nodes, const std::vector<int>& edges) {
  if (nodes.empty() && edges.empty()) return false;
  const ModelGraph& g = doc_->project().model;
  QString text;
  if (nodes.size() == 1 && edges.empty())
    text = tr("Delete %1").arg(id_of(g, nodes.front()));
  else if (nodes.empty())
    text = count_text(static_cast<qint64>(edges.size()), tr("Disconnect %1 edge"),
                      tr("Disconnect %1 edges"));
  else
    text = count_text(static_cast<qint64>(nodes.size()), tr("Delete %1 layer"),
                      tr("Delete %1 layers"));
  doc_->undoStack()->push(new GraphCommand(doc_, text, g, without(g, nodes, edges)));
  return true;
}

void ModelEditor::moveNodes(int dragSerial, const std::vector<NodePosition>& from,
                            const std::vector<NodePosition>& to) {
  if (to.empty() || from == to) return;
  doc_->undoStack()->push(new MoveNodesCommand(doc_, dragSerial, from, to));
}

bool ModelEditor::editNode(int index, const LayerNode& node, const QString& field, QString* why) {
  const ModelGraph& g = doc_->project().model;
  if (index < 0 || static_cast<size_t>(index) >= g.nodes.size()) return false;
  const LayerNode& before = g.nodes[static_cast<size_t>(index)];
  if (node.id != before.id) {
    QString problem;
    if (!valid_node_id(node.id))
      problem = tr("'%1' is not a valid layer id: use 1 to 64 letters, digits, '_', '-' or '.'")
                    .arg(QString::fromStdString(node.id));
    else if (g.find(node.id) >= 0)
      problem = tr("Another layer is already called '%1'; ids must be unique")
                    .arg(QString::fromStdString(node.id));
    if (!problem.isEmpty()) {
      if (why) *why = problem;
      emit refused(problem);
      return false;
    }
  }
  // Another number of input ports (Concat's inputs) redraws the node, and
  // fewer ports drop the edges into the ones that go: one whole-graph step.
  const int ports = layer_input_ports(node);
  if (ports != layer_input_ports(before)) {
    ModelGraph after = g;
    after.nodes[static_cast<size_t>(index)] = node;
    const auto dropped = std::erase_if(
        after.edges, [&](const Edge& e) { return e.to == index && e.to_port >= ports; });
    const QString label = param_label(field);
    QString text =
        tr("Set %1 of %2 to %3")
            .arg(label.isEmpty() ? field : in_sentence(label), QString::fromStdString(before.id))
            .arg(ports);
    if (dropped > 0)
      text = tr("%1, dropping %2")
                 .arg(text, count_text(static_cast<qint64>(dropped), tr("%1 connection"),
                                       tr("%1 connections")));
    doc_->undoStack()->push(new GraphCommand(doc_, text, g, std::move(after)));
    return true;
  }
  doc_->undoStack()->push(new EditNodeCommand(doc_, index, before, node, field));
  return true;
}

std::vector<int> ModelEditor::insertFragment(const ModelGraph& fragment, QPointF offset) {
  std::vector<int> added;
  if (fragment.nodes.empty()) return added;
  const ModelGraph& g = doc_->project().model;
  ModelGraph after = with_fragment(g, fragment, offset.x(), offset.y(), &added);
  doc_->undoStack()->push(new GraphCommand(
      doc_,
      count_text(static_cast<qint64>(added.size()), tr("Paste %1 layer"), tr("Paste %1 layers")), g,
      std::move(after)));
  return added;
}

void ModelEditor::arrange() {
  const ModelGraph& g = doc_->project().model;
  std::vector<NodePosition> from;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    from.push_back({static_cast<int>(i), g.nodes[i].x, g.nodes[i].y});
  std::vector<NodePosition> to = auto_layout(g);
  if (from == to) return;
  auto* cmd = new MoveNodesCommand(doc_, nextDragSerial(), std::move(from), std::move(to));
  cmd->setText(tr("Arrange layers"));
  doc_->undoStack()->push(cmd);
}

bool ModelEditor::setDevices(const DeviceSet& devices) {
  const DeviceSet& before = doc_->project().training.devices;
  if (before.kind == devices.kind && before.ids == devices.ids) return false;
  doc_->undoStack()->push(new SetDevicesCommand(doc_, before, devices));
  return true;
}

}  // namespace tr::gui

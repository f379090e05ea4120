// SPDX-License-Identifier: GPL-3.0-or-later
#include "project_document.h"

#include <QFileInfo>
#include <algorithm>

namespace tr::gui {

ProjectDocument::ProjectDocument(QObject* parent) : QObject(parent) {
  connect(&undo_, &QUndoStack::cleanChanged, this,
          [this](bool clean) { emit modifiedChanged(!clean); });
  reanalyze();
}

int64_t ProjectDocument::analysisBatch() const {
  const TrainingSpec& t = project_.training;
  const int64_t world = std::max(1, t.devices.world_size());
  return std::max<int64_t>(1, t.global_batch / world);
}

QString ProjectDocument::displayName() const {
  if (!filePath_.isEmpty()) return QFileInfo(filePath_).fileName();
  if (!samplePath_.isEmpty()) return tr("%1 (sample)").arg(QFileInfo(samplePath_).fileName());
  if (!project_.name.empty()) return QString::fromStdString(project_.name);
  return tr("untitled");
}

ProjectSettings ProjectDocument::settings() const {
  return {project_.name, project_.description, project_.dataset, project_.training};
}

const std::vector<int>& ProjectDocument::problemsOf(int node) const {
  static const std::vector<int> kNone;
  if (node < 0 || static_cast<size_t>(node) >= nodeProblems_.size()) return kNone;
  return nodeProblems_[static_cast<size_t>(node)];
}

void ProjectDocument::reset(Project project, const QString& filePath, const QString& samplePath) {
  project_ = std::move(project);
  filePath_ = filePath;
  samplePath_ = filePath.isEmpty() ? samplePath : QString();
  undo_.clear();
  undo_.setClean();
  reanalyze();
  emit projectReset();
  emit analysisChanged();
  emit filePathChanged();
  emit modifiedChanged(false);
}

void ProjectDocument::markSaved(const QString& filePath) {
  project_.source_path = filePath.toStdString();
  if (filePath != filePath_ || !samplePath_.isEmpty()) {
    filePath_ = filePath;
    samplePath_.clear();
    emit filePathChanged();
  }
  undo_.setClean();
}

void ProjectDocument::setGraph(const ModelGraph& graph) {
  project_.model = graph;
  reanalyze();
  emit graphChanged();
  emit analysisChanged();
}

void ProjectDocument::setNode(int index, const LayerNode& node) {
  if (index < 0 || static_cast<size_t>(index) >= project_.model.nodes.size()) return;
  project_.model.nodes[static_cast<size_t>(index)] = node;
  reanalyze();
  emit nodeChanged(index);
  emit analysisChanged();
}

void ProjectDocument::setPositions(const std::vector<NodePosition>& positions) {
  auto& nodes = project_.model.nodes;
  for (const NodePosition& p : positions) {
    if (p.node < 0 || static_cast<size_t>(p.node) >= nodes.size()) continue;
    LayerNode& n = nodes[static_cast<size_t>(p.node)];
    n.x = p.x;
    n.y = p.y;
    n.has_position = true;
  }
  emit positionsChanged();
}

void ProjectDocument::setDevices(const DeviceSet& devices) {
  project_.training.devices = devices;
  reanalyze();
  emit settingsChanged();
  emit analysisChanged();
}

void ProjectDocument::setSettings(const ProjectSettings& settings) {
  // A settings step stores the devices of its time; restoring them on undo
  // would silently revert a device choice made through another command.
  const DeviceSet devices = project_.training.devices;
  project_.name = settings.name;
  project_.description = settings.description;
  project_.dataset = settings.dataset;
  project_.training = settings.training;
  project_.training.devices = devices;
  reanalyze();
  emit settingsChanged();
  emit analysisChanged();
}

void ProjectDocument::reanalyze() {
  analysis_ = analyze_model(project_, analysisBatch());
  nodeProblems_.assign(project_.model.nodes.size(), {});
  for (size_t i = 0; i < analysis_.problems.size(); ++i) {
    const int node = project_.model.find(analysis_.problems[i].node_id);
    if (node >= 0) nodeProblems_[static_cast<size_t>(node)].push_back(static_cast<int>(i));
  }
}

}  // namespace tr::gui

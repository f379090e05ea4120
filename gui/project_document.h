// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectDocument: the project the workbench edits, its file, its undo
// history and the live shape analysis. Views read it; every change goes
// through an undo command that calls one of the mutators below, and each
// mutator re-runs tr::analyze_model so shapes and problems are never stale.
#pragma once

#include <QObject>
#include <QString>
#include <QUndoStack>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape_inference.h>

namespace tr::gui {

struct NodePosition {
  int node = -1;
  double x = 0, y = 0;
  bool operator==(const NodePosition&) const = default;
};

// What the training settings panel edits: everything outside the model graph
// and the variants, as one value so one undo command can restore it whole.
struct ProjectSettings {
  std::string name;
  std::string description;
  DatasetSpec dataset;
  TrainingSpec training;

  bool operator==(const ProjectSettings&) const = default;
};

class ProjectDocument : public QObject {
  Q_OBJECT

 public:
  explicit ProjectDocument(QObject* parent = nullptr);

  const Project& project() const { return project_; }
  const ModelAnalysis& analysis() const { return analysis_; }
  // The per-device batch the analysis uses (the train variant's).
  int64_t analysisBatch() const;
  QString filePath() const { return filePath_; }
  // The shipped sample this project was opened from (it has no file of its
  // own until saved elsewhere), or empty.
  QString samplePath() const { return samplePath_; }
  // "lenet-fashion.json", "lenet-fashion.json (sample)", or the project's
  // name when it has no file yet.
  QString displayName() const;
  QUndoStack* undoStack() { return &undo_; }
  ProjectSettings settings() const;
  bool isModified() const { return !undo_.isClean(); }

  int nodeIndex(const std::string& id) const { return project_.model.find(id); }
  // Indices into analysis().problems that name `node`.
  const std::vector<int>& problemsOf(int node) const;

  // New, open, template: replaces everything and clears the undo history.
  // A sample opens with no file path and `samplePath` set.
  void reset(Project project, const QString& filePath, const QString& samplePath = {});
  // After a successful save.
  void markSaved(const QString& filePath);

  // Mutators, called by undo commands only (they are not undoable themselves).
  void setGraph(const ModelGraph& graph);
  void setNode(int index, const LayerNode& node);
  void setPositions(const std::vector<NodePosition>& positions);
  void setDevices(const DeviceSet& devices);
  // Keeps the current devices: they have their own command (setDevices).
  void setSettings(const ProjectSettings& settings);

 signals:
  void projectReset();
  void graphChanged();  // nodes or edges were added or removed: indices may have moved
  void nodeChanged(int index);
  void positionsChanged();
  void settingsChanged();
  void analysisChanged();
  void filePathChanged();
  void modifiedChanged(bool modified);

 private:
  // Signals follow it: first what changed, then analysisChanged, so a view
  // that rebuilds on the first sees a graph and an analysis that agree.
  void reanalyze();

  Project project_;
  QString filePath_;
  QString samplePath_;
  QUndoStack undo_;
  ModelAnalysis analysis_;
  std::vector<std::vector<int>> nodeProblems_;
};

}  // namespace tr::gui

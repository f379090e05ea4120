// SPDX-License-Identifier: GPL-3.0-or-later
// TimelineView: profiled training steps as five lanes (TRANS, COMP_1..3,
// UPDATE) per rank, one bar per op coloured by kind, with zoom and pan, hover
// details, a legend, the overlap statistics, and the Chrome trace export.
// A caption says what it shows (run, project or trace file, steps, ranks),
// and a choice of profiled steps narrows it to one of them.
// Linked to the designer through model layers: highlightLayers() emphasises
// the ops of selected nodes, clicking a bar reports its layer.
#pragma once

#include <QList>
#include <QPoint>
#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/profile.h>
#include "timeline/profile_origin.h"
#include "timeline/timeline_model.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;

namespace tr::gui {

class TimelineCanvas;

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  // `cp` (may be null) is the project the spans were profiled with; without
  // it bars have no layers. `origin` names the run and project for the
  // caption; without a project name there, cp's is used. Shows all profiled
  // steps; no spans: the empty state.
  void setProfile(std::vector<ProfileSpan> spans, std::shared_ptr<const CompiledPlan> cp,
                  ProfileOrigin origin = {});
  // The project to map the shown (or next opened) trace to, e.g. after the
  // design was compiled; bars whose ops it does not have keep no layer. The
  // caption, the step shown and the visible range stay.
  void setCompiled(std::shared_ptr<const CompiledPlan> cp);
  // Drops the profile, its caption and step choice (not the compiled
  // project): the empty state.
  void clear();
  // Loads a trace written by exportChromeTrace or `renaissance-cli train --trace`;
  // the caption names the file.
  bool openChromeTrace(const QString& path, QString* error);
  bool hasProfile() const { return !model_.empty(); }
  const TimelineModel& model() const { return model_; }
  const CompiledPlan* compiled() const { return cp_.get(); }
  const ProfileOrigin& origin() const { return origin_; }
  // Every span of the profile, whichever step is shown.
  const std::vector<ProfileSpan>& profile() const { return profile_; }

  // The profile's known steps, ascending; the step choice offers them when
  // there are two or more.
  const std::vector<int64_t>& steps() const { return steps_; }
  // Shows only `step`'s bars (lanes, overlap statistics and the fitted range
  // follow), or every step's with none. False, changing nothing, without a
  // profile or for a step it does not have.
  bool showStep(std::optional<int64_t> step);
  std::optional<int64_t> shownStep() const { return shown_step_; }

  // Model node indices whose bars are emphasised (the others dimmed); empty: none.
  void highlightLayers(const QList<int>& layers);
  QList<int> highlightedLayers() const { return highlighted_; }

  bool exportChromeTrace(const QString& path, QString* error);

  // For tests and the main window.
  TimelineCanvas* canvas() const { return canvas_; }
  int laneCount() const { return static_cast<int>(model_.lanes().size()); }
  int barCount() const { return static_cast<int>(model_.bars().size()); }
  double visibleStart() const;  // µs since the earliest span
  double visibleEnd() const;
  int barAt(QPoint canvasPos) const;
  QString overlapText() const;
  QString summaryText() const;
  QString captionText() const;
  // "showing 0 µs to 16.52 ms": the part of the profile in view.
  QString rangeText() const;
  QString emptyText() const;
  QPushButton* fitButton() const { return fit_; }
  QPushButton* exportButton() const { return export_; }
  QPushButton* openButton() const { return open_; }
  QComboBox* stepChoice() const { return step_choice_; }

 public slots:
  void fit();

 signals:
  void layerClicked(int layer);
  void status(const QString& text);

 private:
  void chooseExport();
  void chooseOpen();
  // Shows `spans` with `origin` (no spans that can be drawn: false, nothing changes).
  bool showProfile(std::vector<ProfileSpan> spans, ProfileOrigin origin, QString* problems);
  void fillStepChoice();
  TimelineModel shownModel() const;  // of the step shown, or of all
  void showModel(TimelineModel model);
  void onBarClicked(int bar);
  void showRange(double t0_us, double t1_us);

  TimelineModel model_;
  std::shared_ptr<const CompiledPlan> cp_;
  std::vector<ProfileSpan> profile_;  // all steps; model_ holds the shown ones
  ProfileOrigin origin_;
  std::vector<int64_t> steps_;
  bool unknown_steps_ = false;
  std::optional<int64_t> shown_step_;
  QList<int> highlighted_;

  QStackedWidget* pages_;
  QLabel* empty_;
  QLabel* caption_;
  QComboBox* step_choice_;
  QLabel* summary_;
  QLabel* range_;
  QPushButton* fit_;
  QPushButton* export_;
  QPushButton* open_;
  TimelineCanvas* canvas_;
  QPlainTextEdit* overlaps_;
};

}  // namespace tr::gui

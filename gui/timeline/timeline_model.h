// SPDX-License-Identifier: GPL-3.0-or-later
// TimelineModel: profiled spans arranged for drawing, without widgets. One
// lane per (rank, stream), all five streams of every rank that ran work in
// their fixed order; one bar per span, its time relative to the earliest
// span, its kind, and the model layer it computed when the compiled project
// says so; and the training steps the drawn spans say.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>
#include <utility>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/profile.h>
#include "timeline/bar_kind.h"

namespace tr::gui {

struct TimelineLane {
  int rank = 0;
  StreamKind stream = StreamKind::TRANS;
};

struct TimelineBar {
  double start_us = 0, end_us = 0;  // since the earliest span
  int lane = 0;
  int span = 0;    // index into TimelineModel::spans()
  int layer = -1;  // model node index; -1: engine work, or no project to tell
  BarKind kind = BarKind::Other;
  // A collective's bytes per rank and what they are (empty for other work).
  QString collective;
};

class TimelineModel {
 public:
  TimelineModel() = default;
  // `cp` (may be null) is only read here: the project the spans were
  // profiled with, which maps graph nodes to model layers.
  TimelineModel(std::vector<ProfileSpan> spans, const CompiledPlan* cp);

  bool empty() const { return bars_.empty(); }
  const std::vector<ProfileSpan>& spans() const { return spans_; }
  const std::vector<TimelineLane>& lanes() const { return lanes_; }
  const std::vector<TimelineBar>& bars() const { return bars_; }
  int laneOf(int rank, StreamKind stream) const;  // -1 when the rank has no lanes
  int rankCount() const { return static_cast<int>(lanes_.size()) / kNumStreams; }
  double durationUs() const { return duration_us_; }
  double originUs() const { return origin_us_; }  // the earliest start, in backend time
  // The known steps of the drawn spans, ascending; and whether some say none
  // (-1: a trace written before spans knew their step).
  const std::vector<int64_t>& steps() const { return steps_; }
  bool hasUnknownSteps() const { return unknown_steps_; }

  // Bars of one lane in start order, and the positions in that list of the
  // bars that reach into [t0_us, t1_us].
  const std::vector<int>& laneBars(int lane) const;
  std::pair<size_t, size_t> laneRange(int lane, double t0_us, double t1_us) const;

  QString laneName(int lane) const;    // "rank 0 · COMP_1"
  QString layerName(int layer) const;  // "'conv2' (Conv2d)"; empty when unknown
  QString graphName(int bar) const;    // "DEEP_FWD_BWD", or "outside graphs"
  QString label(int bar) const;
  QString describe(int bar) const;  // the hover text
  // Spans that could not be drawn (bad rank or stream), in words; empty when none.
  QString problems() const { return problems_.join('\n'); }
  QString overlapText() const { return overlap_; }

 private:
  std::vector<ProfileSpan> spans_;
  std::vector<TimelineLane> lanes_;
  std::vector<TimelineBar> bars_;
  std::vector<std::vector<int>> lane_bars_;
  // Per lane, the latest end among the first k bars: bars may overlap within
  // a lane (clock skew, bad input), so start order alone cannot bound a search.
  std::vector<std::vector<double>> lane_reach_;
  std::vector<int> lane_of_rank_;  // first lane of each rank, -1 when absent
  QStringList layer_names_;
  QStringList problems_;
  QString overlap_;
  double origin_us_ = 0, duration_us_ = 0;
  std::vector<int64_t> steps_;
  bool unknown_steps_ = false;
};

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
// Lanes, bars and layers from profiled spans.
#include "timeline/timeline_model.h"

#include <QCoreApplication>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string_view>

#include <renaissance/plan_report.h>
#include "timeline/overlap_summary.h"
#include "timeline/time_ticks.h"
#include "widgets/count_text.h"

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct TimelineModelText {
  Q_DECLARE_TR_FUNCTIONS(TimelineModel)
};

// Far beyond any machine, small enough that lanes stay allocatable.
constexpr int kMaxRank = 4096;

// The op in an engine label: "DEEP_FWD_BWD#3 CONV_BWD dW conv2" -> "CONV_BWD".
std::string_view label_op(std::string_view label) {
  const size_t a = label.find(' ');
  if (a == std::string_view::npos) return {};
  const size_t b = label.find(' ', a + 1);
  return label.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1);
}

bool validation_graph(GraphId g) {
  return g == GraphId::INF_MAIN_A || g == GraphId::INF_MAIN_B || g == GraphId::VAL_RESULT_COMM ||
         g == GraphId::UPDATE_BN_INF_PARAMS;
}

// The graph node a span was launched for. A tag names graph and node but not
// the variant, so try the variants that graph runs in, the likely one first,
// and trust a node only when the label's op agrees with it (spans from another
// compile of the project must not point at the wrong layer).
std::optional<PlanNode> node_of(const CompiledPlan& cp, const LaunchTag& tag) {
  if (tag.graph == GraphId::NUM_GRAPH_IDS || tag.node < 0) return std::nullopt;
  std::vector<int> order;
  const int preferred =
      cp.variant_index(validation_graph(tag.graph) ? VariantKind::Validation : VariantKind::Train);
  if (preferred >= 0) order.push_back(preferred);
  for (int v = 0; v < static_cast<int>(cp.variants().size()); ++v)
    if (v != preferred) order.push_back(v);
  const std::string_view op = label_op(tag.label);
  for (int v : order) {
    std::optional<PlanNode> n = cp.node(tag.graph, v, tag.node);
    if (!n) continue;
    // The input copy is labelled "H2D data" / "H2D labels", not by its op.
    if (op.empty() || n->op == op || (n->input_copy && op == "H2D")) return n;
  }
  return std::nullopt;
}

}  // namespace

TimelineModel::TimelineModel(std::vector<ProfileSpan> spans, const CompiledPlan* cp)
    : spans_(std::move(spans)) {
  if (cp)
    for (const LayerNode& n : cp->project().model.nodes)
      layer_names_ << QString::fromStdString(n.label());

  int bad_rank = 0, bad_stream = 0, bad_time = 0, reversed = 0;
  std::set<int> ranks;
  std::set<int64_t> steps;
  origin_us_ = std::numeric_limits<double>::infinity();
  std::vector<char> usable(spans_.size(), 0);
  for (size_t i = 0; i < spans_.size(); ++i) {
    const ProfileSpan& s = spans_[i];
    if (s.rank < 0 || s.rank > kMaxRank) {
      ++bad_rank;
    } else if (static_cast<int>(s.tag.stream) >= kNumStreams) {
      ++bad_stream;
    } else if (!std::isfinite(s.start_us) || !std::isfinite(s.end_us)) {
      ++bad_time;
    } else {
      usable[i] = 1;
      reversed += s.end_us < s.start_us;
      ranks.insert(s.rank);
      if (s.step >= 0)
        steps.insert(s.step);
      else
        unknown_steps_ = true;
      origin_us_ = std::min(origin_us_, s.start_us);
    }
  }
  if (bad_rank)
    problems_ << count_text(bad_rank,
                            TimelineModelText::tr("%1 span with a rank outside 0..%2 left out"),
                            TimelineModelText::tr("%1 spans with a rank outside 0..%2 left out"))
                     .arg(kMaxRank);
  if (bad_stream)
    problems_ << count_text(bad_stream,
                            TimelineModelText::tr("%1 span on an unknown stream left out"),
                            TimelineModelText::tr("%1 spans on an unknown stream left out"));
  if (bad_time)
    problems_ << count_text(
        bad_time, TimelineModelText::tr("%1 span without a finite start or end left out"),
        TimelineModelText::tr("%1 spans without a finite start or end left out"));
  if (reversed)
    problems_ << count_text(
        reversed, TimelineModelText::tr("%1 span ending before it starts drawn as an instant"),
        TimelineModelText::tr("%1 spans ending before they start drawn as instants"));
  if (ranks.empty()) {
    origin_us_ = 0;
    return;
  }
  steps_.assign(steps.begin(), steps.end());

  lane_of_rank_.assign(static_cast<size_t>(*ranks.rbegin()) + 1, -1);
  for (int r : ranks) {
    lane_of_rank_[static_cast<size_t>(r)] = static_cast<int>(lanes_.size());
    for (int s = 0; s < kNumStreams; ++s) lanes_.push_back({r, static_cast<StreamKind>(s)});
  }
  lane_bars_.resize(lanes_.size());
  lane_reach_.resize(lanes_.size());

  for (size_t i = 0; i < spans_.size(); ++i) {
    if (!usable[i]) continue;
    const ProfileSpan& s = spans_[i];
    TimelineBar b;
    b.start_us = s.start_us - origin_us_;
    b.end_us = std::max(s.end_us, s.start_us) - origin_us_;
    b.lane = laneOf(s.rank, s.tag.stream);
    b.span = static_cast<int>(i);
    const std::optional<PlanNode> node = cp ? node_of(*cp, s.tag) : std::nullopt;
    if (node) b.layer = node->layer;
    if (node && node->collective_bytes > 0) {
      b.collective = TimelineModelText::tr("%1 from each rank: %2")
                         .arg(QString::fromStdString(human_bytes(node->collective_bytes)),
                              QString::fromStdString(node->collective_regions));
      if (!node->collective_cause.empty())
        b.collective += TimelineModelText::tr("\ncarries %1")
                            .arg(QString::fromStdString(node->collective_cause));
    }
    b.kind = bar_kind_of(s.tag.graph, node ? std::string_view(node->op) : label_op(s.tag.label),
                         s.tag.label);
    duration_us_ = std::max(duration_us_, b.end_us);
    lane_bars_[static_cast<size_t>(b.lane)].push_back(static_cast<int>(bars_.size()));
    bars_.push_back(b);
  }
  for (size_t l = 0; l < lanes_.size(); ++l) {
    std::vector<int>& ids = lane_bars_[l];
    std::stable_sort(ids.begin(), ids.end(), [this](int a, int b) {
      return bars_[static_cast<size_t>(a)].start_us < bars_[static_cast<size_t>(b)].start_us;
    });
    double reach = -std::numeric_limits<double>::infinity();
    for (int id : ids) {
      reach = std::max(reach, bars_[static_cast<size_t>(id)].end_us);
      lane_reach_[l].push_back(reach);
    }
  }
  overlap_ = overlap_summary(spans_);
}

int TimelineModel::laneOf(int rank, StreamKind stream) const {
  if (rank < 0 || static_cast<size_t>(rank) >= lane_of_rank_.size()) return -1;
  const int first = lane_of_rank_[static_cast<size_t>(rank)];
  return first < 0 ? -1 : first + static_cast<int>(stream);
}

const std::vector<int>& TimelineModel::laneBars(int lane) const {
  static const std::vector<int> none;
  if (lane < 0 || static_cast<size_t>(lane) >= lane_bars_.size()) return none;
  return lane_bars_[static_cast<size_t>(lane)];
}

std::pair<size_t, size_t> TimelineModel::laneRange(int lane, double t0_us, double t1_us) const {
  if (lane < 0 || static_cast<size_t>(lane) >= lane_bars_.size()) return {0, 0};
  const std::vector<int>& ids = lane_bars_[static_cast<size_t>(lane)];
  const std::vector<double>& reach = lane_reach_[static_cast<size_t>(lane)];
  // The first bar whose prefix reaches t0 may still end before it, but no
  // earlier bar can reach into the range.
  const size_t first =
      static_cast<size_t>(std::lower_bound(reach.begin(), reach.end(), t0_us) - reach.begin());
  const size_t last =
      static_cast<size_t>(std::upper_bound(ids.begin(), ids.end(), t1_us,
                                           [this](double t, int id) {
                                             return t < bars_[static_cast<size_t>(id)].start_us;
                                           }) -
                          ids.begin());
  return {first, std::max(first, last)};
}

QString TimelineModel::laneName(int lane) const {
  if (lane < 0 || static_cast<size_t>(lane) >= lanes_.size()) return {};
  const TimelineLane& l = lanes_[static_cast<size_t>(lane)];
  return TimelineModelText::tr("rank %1 · %2")
      .arg(l.rank)
      .arg(QString::fromUtf8(stream_kind_name(l.stream).data()));
}

QString TimelineModel::layerName(int layer) const {
  return layer >= 0 && layer < layer_names_.size() ? layer_names_[layer] : QString();
}

QString TimelineModel::graphName(int bar) const {
  if (bar < 0 || static_cast<size_t>(bar) >= bars_.size()) return {};
  const GraphId g = spans_[static_cast<size_t>(bars_[static_cast<size_t>(bar)].span)].tag.graph;
  if (g == GraphId::NUM_GRAPH_IDS) return TimelineModelText::tr("outside graphs");
  return QString::fromUtf8(graph_id_name(g).data());
}

QString TimelineModel::label(int bar) const {
  if (bar < 0 || static_cast<size_t>(bar) >= bars_.size()) return {};
  const std::string& l =
      spans_[static_cast<size_t>(bars_[static_cast<size_t>(bar)].span)].tag.label;
  return l.empty() ? TimelineModelText::tr("(unnamed launch)") : QString::fromStdString(l);
}

QString TimelineModel::describe(int bar) const {
  if (bar < 0 || static_cast<size_t>(bar) >= bars_.size()) return {};
  const TimelineBar& b = bars_[static_cast<size_t>(bar)];
  const LaunchTag& tag = spans_[static_cast<size_t>(b.span)].tag;
  QStringList lines;
  lines << label(bar);
  if (tag.graph == GraphId::NUM_GRAPH_IDS)
    lines << TimelineModelText::tr("graph: none (launched by the host)");
  else
    lines << TimelineModelText::tr("graph: %1, node %2").arg(graphName(bar)).arg(tag.node);
  if (b.layer >= 0)
    lines << TimelineModelText::tr("layer: %1")
                 .arg(layerName(b.layer).isEmpty() ? QString::number(b.layer) : layerName(b.layer));
  else if (layer_names_.isEmpty() && tag.graph != GraphId::NUM_GRAPH_IDS)
    lines << TimelineModelText::tr("layer: unknown (no compiled project with this profile)");
  else
    lines << TimelineModelText::tr("layer: none (engine work)");
  lines << TimelineModelText::tr("%1, %2").arg(laneName(b.lane), bar_kind_name(b.kind));
  if (!b.collective.isEmpty()) lines << b.collective;
  lines << TimelineModelText::tr("start %1, duration %2")
               .arg(duration_text(b.start_us), duration_text(b.end_us - b.start_us));
  return lines.join('\n');
}

}  // namespace tr::gui

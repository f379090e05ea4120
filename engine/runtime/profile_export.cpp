// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/profile_export.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

namespace tr {

namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint union of intervals.
std::vector<Interval> merged(std::vector<Interval> xs) {
  std::sort(xs.begin(), xs.end());
  std::vector<Interval> out;
  for (const Interval& x : xs) {
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

double total(const std::vector<Interval>& xs) {
  double t = 0;
  for (const Interval& x : xs) t += x.second - x.first;
  return t;
}

double intersection(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double t = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) t += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return t;
}

}  // namespace

std::string chrome_trace_json(const std::vector<ProfileSpan>& spans) {
  using nlohmann::json;
  json events = json::array();
  std::map<int, bool> ranks;
  for (const ProfileSpan& s : spans) ranks[s.rank] = true;
  for (const auto& [rank, unused] : ranks) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", rank},
                      {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    for (int s = 0; s < kNumStreams; ++s)
      events.push_back(
          {{"ph", "M"},
           {"name", "thread_name"},
           {"pid", rank},
           {"tid", s},
           {"args", {{"name", std::string(stream_kind_name(static_cast<StreamKind>(s)))}}}});
  }
  for (const ProfileSpan& s : spans) {
    json e = {
        {"ph", "X"},        {"name", s.tag.label.empty() ? std::string("launch") : s.tag.label},
        {"pid", s.rank},    {"tid", static_cast<int>(s.tag.stream)},
        {"ts", s.start_us}, {"dur", std::max(0.0, s.end_us - s.start_us)}};
    json args;
    if (s.tag.graph != GraphId::NUM_GRAPH_IDS) {
      args["graph"] = graph_id_name(s.tag.graph);
      args["node"] = s.tag.node;
      e["cat"] = graph_id_name(s.tag.graph);
    }
    args["stream"] = stream_kind_name(s.tag.stream);
    // An unknown step is left out rather than written as -1.
    if (s.step >= 0) args["step"] = s.step;
    e["args"] = std::move(args);
    events.push_back(std::move(e));
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

std::vector<StreamOverlap> stream_overlaps(const std::vector<ProfileSpan>& spans) {
  std::map<std::pair<int, int>, std::vector<Interval>> busy;
  for (const ProfileSpan& s : spans)
    busy[{s.rank, static_cast<int>(s.tag.stream)}].push_back({s.start_us, s.end_us});
  for (auto& [key, xs] : busy) xs = merged(std::move(xs));
  std::vector<StreamOverlap> out;
  for (auto i = busy.begin(); i != busy.end(); ++i)
    for (auto j = std::next(i); j != busy.end(); ++j) {
      if (i->first.first != j->first.first) continue;
      StreamOverlap o;
      o.rank = i->first.first;
      o.a = static_cast<StreamKind>(i->first.second);
      o.b = static_cast<StreamKind>(j->first.second);
      o.busy_a_us = total(i->second);
      o.busy_b_us = total(j->second);
      o.overlap_us = intersection(i->second, j->second);
      out.push_back(o);
    }
  return out;
}

namespace {

// Per rank, how long the spans `in_a` picks ran, how long those `in_b`
// picks ran, and how long both did; ranks without a span of `a` (or, with
// `need_b`, of `b`) are left out.
template <typename A, typename B>
std::vector<GraphOverlap> overlaps(const std::vector<ProfileSpan>& spans, A in_a, B in_b,
                                   bool need_b) {
  std::map<int, std::pair<std::vector<Interval>, std::vector<Interval>>> busy;
  for (const ProfileSpan& s : spans) {
    if (in_a(s)) busy[s.rank].first.push_back({s.start_us, s.end_us});
    if (in_b(s)) busy[s.rank].second.push_back({s.start_us, s.end_us});
  }
  std::vector<GraphOverlap> out;
  for (auto& [rank, ab] : busy) {
    if (ab.first.empty() || (need_b && ab.second.empty())) continue;
    const std::vector<Interval> ma = merged(std::move(ab.first));
    const std::vector<Interval> mb = merged(std::move(ab.second));
    GraphOverlap o;
    o.rank = rank;
    o.busy_a_us = total(ma);
    o.busy_b_us = total(mb);
    o.overlap_us = intersection(ma, mb);
    out.push_back(o);
  }
  return out;
}

}  // namespace

std::vector<GraphOverlap> graph_overlaps(const std::vector<ProfileSpan>& spans,
                                         const std::vector<GraphId>& a,
                                         const std::vector<GraphId>& b) {
  auto in = [](const std::vector<GraphId>& ids) {
    return [&ids](const ProfileSpan& s) {
      return std::find(ids.begin(), ids.end(), s.tag.graph) != ids.end();
    };
  };
  return overlaps(spans, in(a), in(b), true);
}

std::vector<GraphOverlap> hidden_communication(const std::vector<ProfileSpan>& spans) {
  return overlaps(
      spans, [](const ProfileSpan& s) { return s.tag.collective; },
      [](const ProfileSpan& s) { return !s.tag.collective; }, false);
}

std::vector<GraphOverlap> comm_overlaps(const std::vector<ProfileSpan>& spans) {
  return graph_overlaps(spans, {GraphId::DEEP_COMM},
                        {GraphId::FIRST_LAYER_BWD_A, GraphId::FIRST_LAYER_BWD_B});
}

}  // namespace tr

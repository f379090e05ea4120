// SPDX-License-Identifier: GPL-3.0-or-later
// What the profiler saw, for people: Chrome trace JSON (Perfetto opens it),
// one process per rank and one thread per stream, and overlap statistics that
// say how long each pair of streams, or each pair of graphs, was busy at the
// same time.
#pragma once

#include <string>
#include <vector>

#include <renaissance/profile.h>

namespace tr {

// Each span is one complete ("X") event; its args name the stream, the graph
// and node when it ran in one, and the step when known.
std::string chrome_trace_json(const std::vector<ProfileSpan>& spans);

struct StreamOverlap {
  int rank = 0;
  StreamKind a = StreamKind::TRANS, b = StreamKind::TRANS;
  double busy_a_us = 0, busy_b_us = 0;
  double overlap_us = 0;  // time both were busy
};

// Every pair of streams of every rank that had work.
std::vector<StreamOverlap> stream_overlaps(const std::vector<ProfileSpan>& spans);

struct GraphOverlap {
  int rank = 0;
  double busy_a_us = 0, busy_b_us = 0;  // time the launches of either group ran
  double overlap_us = 0;                // time both ran
  double fraction_of_a() const { return busy_a_us > 0 ? overlap_us / busy_a_us : 0; }
};

// Per rank that ran both: how long graphs `a` (any of them) ran while graphs
// `b` ran, e.g. a communication graph under a compute graph.
std::vector<GraphOverlap> graph_overlaps(const std::vector<ProfileSpan>& spans,
                                         const std::vector<GraphId>& a,
                                         const std::vector<GraphId>& b);

// The overlap the step schedule is built for: DEEP_COMM under FIRST_LAYER_BWD (A or B).
std::vector<GraphOverlap> comm_overlaps(const std::vector<ProfileSpan>& spans);

// Per rank: how long its collectives ran (every group's: the gradient
// buckets', tensor parallel's sums) and how much of that its kernels ran
// beside them, on other streams: the communication hidden under compute
// (a = collectives, b = everything else).
std::vector<GraphOverlap> hidden_communication(const std::vector<ProfileSpan>& spans);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// What the profiler records: every launch of a profiled step, with the graph
// node it came from, its stream and rank, and when it ran.
#pragma once

#include <cstdint>
#include <string>

#include <renaissance/graph_id.h>
#include <renaissance/stream_kind.h>

namespace tr {

// Where a launch came from, for the profiler and for messages.
struct LaunchTag {
  GraphId graph = GraphId::NUM_GRAPH_IDS;  // NUM_GRAPH_IDS: not from a graph
  int node = -1;
  int part = -1;  // BwdPart of a forked op, -1 otherwise
  StreamKind stream = StreamKind::COMP_1;
  std::string label;        // "DEEP_FWD_BWD#3 CONV_BWD conv2 dW"
  bool collective = false;  // communication between ranks, not a kernel or a copy
};

// A span of work the profiler saw: one launch executed on one rank.
struct ProfileSpan {
  int rank = 0;
  LaunchTag tag;
  double start_us = 0;  // since the backend's clock origin
  double end_us = 0;
  // The global training step the span belongs to; -1 when unknown (a backend
  // records none: the trainer stamps what it takes at each step's end, and
  // traces written before steps were recorded have none).
  int64_t step = -1;
};

}  // namespace tr

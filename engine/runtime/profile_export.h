// SPDX-License-Identifier: GPL-3.0-or-later
// What the profiler saw, for people: Chrome trace JSON (Perfetto opens it),
// one process per rank and one thread per stream, and overlap statistics that
// say how long each pair of streams was busy at the same time.
#pragma once

#include <string>
#include <vector>

#include "runtime/backend.h"

namespace tr {

std::string chrome_trace_json(const std::vector<ProfileSpan>& spans);

struct StreamOverlap {
  int rank = 0;
  StreamKind a = StreamKind::TRANS, b = StreamKind::TRANS;
  double busy_a_us = 0, busy_b_us = 0;
  double overlap_us = 0;  // time both were busy
};

// Every pair of streams of every rank that had work.
std::vector<StreamOverlap> stream_overlaps(const std::vector<ProfileSpan>& spans);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU backend's captured graph: launches with their dependency edges as
// stream capture recorded them. Instantiation checks (optionally) that the
// edges order every pair of launches that touch the same bytes; replay runs
// the launches in a dependency order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/launch.h"

namespace tr::cpu {

struct CapturedNode {
  Launch launch;
  std::vector<int> preds;  // indices of earlier nodes this one waits for
  bool empty = false;      // a join point with no work (CUDA's empty node)
};

struct CpuGraph {
  std::vector<CapturedNode> nodes;
  int rank = 0;

  // Throws std::logic_error naming both launches when two conflicting
  // launches (read-after-write, write-after-read, write-after-write) are not
  // ordered by a path of edges: a missing barrier.
  void verify_dependencies() const;
  // Number of edges, for tests and messages.
  size_t edge_count() const;
};

}  // namespace tr::cpu

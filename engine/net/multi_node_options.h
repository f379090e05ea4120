// SPDX-License-Identifier: GPL-3.0-or-later
// How this process takes part in a run across machines: the node count, its
// rank and where they meet. Plain values, so a backend's options can carry
// them without the compiler (net/multi_node.h has the functions).
#pragma once

#include <chrono>
#include <string>

namespace tr {

struct MultiNodeOptions {
  int nodes = 1;           // machines, one process each; 1: everything in this process
  int node_rank = 0;       // 0..nodes-1; node 0 listens for the others
  std::string rendezvous;  // HOST:PORT of node 0
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // for every node to join
  bool across_nodes() const noexcept { return nodes > 1; }
};

}  // namespace tr

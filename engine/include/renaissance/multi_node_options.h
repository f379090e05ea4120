// SPDX-License-Identifier: GPL-3.0-or-later
// How this process takes part in a run across machines: the node count, its
// rank and where they meet. Plain values, so a backend's options can carry
// them without the compiler, and the checks a front end makes of them.
#pragma once

#include <chrono>
#include <string>

#include <renaissance/project.h>

namespace tr {

struct MultiNodeOptions {
  int nodes = 1;           // machines, one process each; 1: everything in this process
  int node_rank = 0;       // 0..nodes-1; node 0 listens for the others
  std::string rendezvous;  // HOST:PORT of node 0
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // for every node to join
  // Where training starts when not from fresh weights ("resuming at step
  // 40"): every node must start from the same point, checked at the
  // rendezvous with the plan.
  std::string starting_point;
  bool across_nodes() const noexcept { return nodes > 1; }
};

// Throws UsageError when the options do not fit together.
void check_multi_node(const MultiNodeOptions& nodes);

// Throws UsageError unless `address` is HOST:PORT or [IPv6]:PORT with a port
// other than 0 (`option` names where it came from).
void check_rendezvous_address(const std::string& address,
                              const std::string& option = "--rendezvous");

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// Lifetimes of the per-step tensors (the feature and gradient slots of the F
// regions, and T scratch) over one step of a variant: the step's graphs in
// schedule order (ENGINE.md §6; GraphId order, the A buffer's graphs
// standing for A and B alike; a validation variant's step is one batch of
// the evaluation) flattened into one node order. A tensor lives
// from the first node that touches it to the last: features saved for the
// backward live into it, a gradient slot from its producer to its last
// consumer. Nodes of one graph run in order (each waits for the one before);
// of the graphs that may run beside compute, the next batch's TRANSFER
// touches no step-local bytes, and what the cast and communication under
// FIRST_LAYER_BWD touch (ZeRO-2's deep gradient bucket) lives from that
// backward's first node. So positions in this order bound when the bytes
// are in use. Under ZeRO-2 the gradients (G, H) are step-local too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <renaissance/compiled_plan.h>
#include <renaissance/graph_id.h>
#include <renaissance/project.h>

namespace tr {

struct TensorLifetime {
  DTensorId id = kNoTensor;
  int first = -1, last = -1;  // positions in the step's node order; -1: never touched
  uint64_t bytes = 0;         // what this variant's shape needs
};

// One node of the flattened step, for naming positions.
struct StepPosition {
  GraphId graph = GraphId::NUM_GRAPH_IDS;
  int node = -1;   // index in that graph
  int layer = -1;  // model node, -1 for engine work
};

struct StepLifetimes {
  std::vector<StepPosition> order;      // the step's nodes, in order
  std::vector<TensorLifetime> tensors;  // the variant's F and T tensors, by id order
  uint64_t planned_bytes = 0;           // their slots as the plan lays them out today
  uint64_t peak_bytes = 0;              // the most bytes live at one position
  int peak_position = -1;               // where (first such position)

  // "DEEP_FWD_BWD #12 (conv2)" for a position.
  std::string describe(const Project& project, int position) const;
};

StepLifetimes step_lifetimes(const CompiledPlan& plan, int variant);

}  // namespace tr

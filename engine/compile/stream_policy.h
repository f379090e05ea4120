// SPDX-License-Identifier: GPL-3.0-or-later
// The static op -> stream policy (ENGINE.md §4), as pure functions so that
// the compiler, the runtime and the tests all ask the same question the same way.
#pragma once

#include <vector>

#include "compile/computation_graph.h"

namespace tr {

// Representative stream of a node: the one downstream work waits for.
StreamKind stream_for(const GraphNode& node) noexcept;
// The stream a whole subgraph is launched on.
StreamKind stream_for(GraphId graph) noexcept;
// How a backward op forks across streams (empty when it does not fork).
// dX overwrites X in place, so it waits for dW, which reads X.
std::vector<ForkPart> fork_parts(ComputeOp op, bool has_bias);

}  // namespace tr

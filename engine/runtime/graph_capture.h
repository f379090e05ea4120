// SPDX-License-Identifier: GPL-3.0-or-later
// The multi-stream capture protocol (ENGINE.md §5), written once against the
// Backend interface: begin on the graph's primary stream, fork every other
// stream from an event recorded there, replay the nodes with the cross-op
// barrier (only the next node's representative stream waits on the previous
// node's event, and only when the streams differ), fork forked backward ops
// into their parts (dX after dW), join every stream back, end and instantiate.
#pragma once

#include <vector>

#include "runtime/backend.h"
#include "runtime/graph_resolver.h"

namespace tr {

// Events created before any capture begins and handed out in order during one.
class EventPool {
 public:
  EventPool(Backend& backend, int rank, size_t count);
  EventId take();
  void reset() noexcept { next_ = 0; }
  size_t size() const noexcept { return ids_.size(); }

 private:
  std::vector<EventId> ids_;
  size_t next_ = 0;
};

// How many events capturing `graph` takes.
size_t capture_events_needed(const ComputationGraph& graph);

struct CaptureOptions {
  // Test hook: drop the cross-op barrier before this node, to prove that the
  // dependency check catches a missing barrier. -1 keeps every barrier.
  int skip_barrier_before = -1;
};

GraphHandle capture_graph(Backend& backend, const CompiledProject& cp, const ResolvedGraph& graph,
                          EventPool& events, const TransferHost& host = {},
                          const CaptureOptions& options = {});

}  // namespace tr

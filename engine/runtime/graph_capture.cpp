// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/graph_capture.h"

#include <stdexcept>
#include <vector>

namespace tr {

EventPool::EventPool(Backend& backend, int rank, size_t count) {
  ids_.reserve(count);
  for (size_t i = 0; i < count; ++i) ids_.push_back(backend.create_event(rank));
}

EventId EventPool::take() {
  if (next_ >= ids_.size())
    throw std::logic_error("EventPool: capture needs more events than were created");
  return ids_[next_++];
}

size_t capture_events_needed(const ComputationGraph& graph) {
  size_t n = 1 + kNumStreams;  // the fork and the final join
  for (const GraphNode& node : graph.nodes) n += 1 + (node.fork.empty() ? 0 : 1 + node.fork.size());
  return n;
}

namespace {

// Everything between begin_capture and end_capture; `launches` per node.
GraphHandle capture_nodes(Backend& backend, const ResolvedGraph& rg,
                          std::vector<std::vector<Launch>>& launches_of, EventPool& events,
                          const CaptureOptions& options) {
  const ComputationGraph& g = *rg.graph;
  const int rank = rg.rank;
  const StreamKind primary = g.stream;
  const EventId fork = events.take();
  backend.record(rank, primary, fork);
  for (int s = 0; s < kNumStreams; ++s)
    if (static_cast<StreamKind>(s) != primary) backend.wait(rank, static_cast<StreamKind>(s), fork);

  StreamKind prev_stream = primary;
  EventId prev_event = fork;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const GraphNode& node = g.nodes[i];
    const StreamKind rep = node.stream;
    const bool skip = options.skip_barrier_before == static_cast<int>(i);
    if (i > 0 && rep != prev_stream && !skip) backend.wait(rank, rep, prev_event);
    std::vector<Launch>& launches = launches_of[i];
    if (node.fork.empty()) {
      for (Launch& l : launches) backend.enqueue(rank, rep, std::move(l));
    } else {
      // The parts on other streams need the node's inputs: fork them from rep.
      const EventId start = events.take();
      backend.record(rank, rep, start);
      std::vector<EventId> done(node.fork.size());
      for (size_t k = 0; k < node.fork.size(); ++k) {
        const ForkPart& part = node.fork[k];
        if (part.stream != rep) backend.wait(rank, part.stream, start);
        // dX overwrites X in place: it may start only after dW has read X.
        if (part.after >= 0) backend.wait(rank, part.stream, done[static_cast<size_t>(part.after)]);
        backend.enqueue(rank, part.stream, std::move(launches[k]));
        done[k] = events.take();
        backend.record(rank, part.stream, done[k]);
      }
      for (size_t k = 0; k < node.fork.size(); ++k)
        if (node.fork[k].stream != rep) backend.wait(rank, rep, done[k]);
    }
    prev_event = events.take();
    backend.record(rank, rep, prev_event);
    prev_stream = rep;
  }
  // Join: the primary waits for every other stream's last work.
  for (int s = 0; s < kNumStreams; ++s) {
    const auto stream = static_cast<StreamKind>(s);
    if (stream == primary) continue;
    const EventId last = events.take();
    backend.record(rank, stream, last);
    backend.wait(rank, primary, last);
  }
  return backend.end_capture(rank, primary);
}

}  // namespace

GraphHandle capture_graph(Backend& backend, const CompiledProject& cp, const ResolvedGraph& rg,
                          EventPool& events, const TransferHost& host,
                          const CaptureOptions& options) {
  const ComputationGraph& g = *rg.graph;
  const int rank = rg.rank;
  const StreamKind primary = g.stream;
  events.reset();
  // The launches once; algorithms and workspaces first, as nothing may
  // allocate inside the capture.
  std::vector<std::vector<Launch>> launches(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    launches[i] = node_launches(cp, rg, i, host);
    for (const Launch& l : launches[i]) backend.prepare_launch(rank, l.tag.stream, l);
  }

  backend.begin_capture(rank, primary);
  try {
    return capture_nodes(backend, rg, launches, events, options);
  } catch (...) {
    // The original error, and no stream left capturing.
    backend.abort_capture(rank);
    throw;
  }
}

}  // namespace tr

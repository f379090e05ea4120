// SPDX-License-Identifier: GPL-3.0-or-later
// Backend: the small interface every device implementation provides (CPU
// always, CUDA where built). Everything above it (capture protocol, step
// schedule, trainer, profiler) is written once against this interface, so
// what the CPU tests exercise is what runs on GPUs.
//
// The model is CUDA's: per rank, five streams that run their work in order;
// events recorded on one stream and waited on by another; stream capture that
// turns the work enqueued between begin_capture and end_capture into a graph
// (streams join a capture by waiting on an event recorded inside it), and graph
// launches that replay it. Events are created before any capture begins.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <renaissance/profile.h>
#include <renaissance/stream_kind.h>

#include "runtime/launch.h"

namespace tr {

using EventId = int32_t;
using GraphHandle = int32_t;

enum class ReduceOp : uint8_t { SUM, MEAN };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  // The ranks this process drives (arenas, streams, graphs: local ranks 0..n-1).
  virtual int world_size() const = 0;
  // Training across machines runs one process a node, and the collectives
  // span every process: the global world counts all their ranks, and local
  // rank r is rank global_rank(r) in it (the data split, dropout streams and
  // broadcast roots use global ranks). A single-process backend is the whole
  // world.
  virtual int global_world() const { return world_size(); }
  virtual int global_rank(int local_rank) const { return local_rank; }
  // True when `flag` is true in any process, so that every node stops before
  // the same step. Every process calls it at the same point, from one thread
  // while its other rank threads wait, with no host collective in flight.
  virtual bool any_process(bool flag) { return flag; }
  // This process holds global rank 0: it alone writes checkpoints and records the run.
  bool leads() const { return global_rank(0) == 0; }

  // Host memory that copies read or write at every replay (the input
  // pipeline's staging buffers): a GPU backend page-locks it, so a captured
  // copy is a plain DMA that never stages through a driver buffer. The
  // memory is whole pages of its own (Tensor::whole_pages), as page-locking
  // works on pages. Every pin_host is undone by unpin_host before the memory
  // is freed.
  virtual void pin_host(const void* data, uint64_t bytes) {
    (void)data;
    (void)bytes;
  }
  virtual void unpin_host(const void* data) noexcept { (void)data; }

  // One arena per rank of exactly `bytes`, zero-filled; pointers are base + offset.
  virtual void allocate_arenas(uint64_t bytes) = 0;
  virtual uint8_t* arena(int rank) = 0;
  virtual uint64_t arena_bytes() const = 0;

  virtual EventId create_event(int rank) = 0;
  virtual void record(int rank, StreamKind stream, EventId event) = 0;
  virtual void wait(int rank, StreamKind stream, EventId event) = 0;
  // The host blocks until the stream (or every stream of the rank) is idle.
  virtual void synchronize(int rank, StreamKind stream) = 0;
  virtual void synchronize(int rank) = 0;
  // The host blocks until the work before the latest record of `event` is
  // done (at once when it was never recorded), while later work stays in
  // flight: how the runtime reads one step's result while the next computes.
  // Errors of the work it waited for surface here.
  virtual void synchronize_event(int rank, EventId event) = 0;

  virtual void enqueue(int rank, StreamKind stream, Launch launch) = 0;

  // Before a capture, once for every launch it will record (on `stream`): a
  // GPU backend chooses its library algorithms and sizes the stream's
  // workspace here, so that nothing inside the capture allocates or asks a
  // library to choose. The CPU backend needs nothing.
  virtual void prepare_launch(int rank, StreamKind stream, const Launch& launch) {
    (void)rank;
    (void)stream;
    (void)launch;
  }
  // Whether the runtime should run each compute graph once, uncaptured,
  // before capturing it (the CUDA-graph recipe: libraries and lazily loaded
  // kernels do their first-use work outside any capture).
  virtual bool warm_up_before_capture() const { return false; }
  virtual void begin_capture(int rank, StreamKind primary) = 0;
  // Ends the capture and instantiates the graph; throws std::logic_error when a
  // stream that joined the capture was not joined back into `primary`.
  virtual GraphHandle end_capture(int rank, StreamKind primary) = 0;
  // Ends a capture that failed part-way (a launcher threw): discards what was
  // captured and leaves every stream of the rank out of capture, so the
  // original error is what the caller sees and later calls work. Nothing
  // happens when no capture is under way.
  virtual void abort_capture(int rank) noexcept = 0;
  virtual void launch_graph(int rank, StreamKind stream, GraphHandle graph) = 0;

  // Collectives the host issues outside captured graphs (initial weights,
  // checkpoint restore), with NCCL's rules: every rank issues the same calls
  // in the same order, each on one stream of its own, in place on its arena
  // bytes `range`; all-reduces work on FP32; `root` is a global rank. Calls a rank issues between
  // group_start and group_end (on one stream) run as one collective, like
  // ncclGroupStart/End. A single host thread may issue them for every rank.
  virtual void all_reduce(int rank, StreamKind stream, ByteRange range, ReduceOp op) = 0;
  virtual void broadcast(int rank, StreamKind stream, ByteRange range, int root) = 0;
  virtual void group_start(int rank) = 0;
  virtual void group_end(int rank) = 0;
  // One rank failed and will not reach its next collective: every collective
  // waiting for it, now or later, fails with `reason` instead of blocking (the
  // error surfaces at the next synchronize of each rank). Final for the backend.
  virtual void abort_collectives(const std::string& reason) = 0;

  // Profiling: while enabled, every executed launch is recorded as a span.
  // take_profile hands over (and forgets) the spans recorded so far; it may be
  // called while profiling stays enabled, e.g. at the end of every step.
  virtual void set_profiling(bool enabled) = 0;
  virtual std::vector<ProfileSpan> take_profile() = 0;
};

}  // namespace tr

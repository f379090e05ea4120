// SPDX-License-Identifier: GPL-3.0-or-later
// BatchPipeline: the host side of the A/B double-buffered input pipeline.
// A background thread fills one staging Batch while the runtime copies the
// other to the device, so decoding batch k+1 overlaps the step on batch k.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>

#include "data/batch.h"
#include "data/data_source.h"
#include "data/epoch_plan.h"
#include "data/sample_transform.h"

namespace tr {

// Protocol (one consumer thread, typically the rank's host thread):
//   for (const Batch* b; (b = p.next()); ) { enqueue H2D of *b; ...; p.release(b); }
//   p.start_epoch(e + 1);
// next() hands out batches in order and blocks until the next one is filled;
// release(b) says the H2D copy finished and the buffer may be refilled. A
// consumer may hold both buffers at once (A being copied, B being prepared),
// but asking for a third without releasing one is an error, not a deadlock.
class BatchPipeline {
 public:
  // The source must outlive the pipeline. Filling starts at once with
  // spec.epoch. Throws UsageError on an invalid spec.
  BatchPipeline(const DataSource& source, Split split, BatchSpec spec, int world_size = 1,
                int rank = 0);
  // Stops the producer, abandoning a half-filled batch, and joins it.
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // The next batch of the epoch, or nullptr when the epoch is over (or the
  // pipeline was stopped). Rethrows an error raised while filling.
  const Batch* next();
  void release(const Batch* batch);
  // Begins (another) epoch, reshuffled from (seed, epoch), at batch
  // `first_batch` (a resumed run skips the batches it trained, without
  // reading them). Batches not yet handed out are discarded; every
  // handed-out batch must be released first.
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // Stops filling; next() returns nullptr from then on. Idempotent.
  void stop();

  // The three accessors below belong to the consumer thread, like start_epoch().
  int64_t batches_per_epoch() const noexcept { return plan_.batches(); }
  int64_t local_batch() const noexcept { return plan_.local_batch(); }
  const EpochPlan& plan() const noexcept { return plan_; }
  // Staging buffer 0 (A) or 1 (B). Their storage never moves, so the runtime
  // can page-lock both once (cudaHostRegister) before the first next().
  const Batch& staging(int buffer) const noexcept { return buffers_[buffer == 0 ? 0 : 1]; }
  // Batches filled and waiting for next(): 1 while the consumer holds one
  // buffer proves the producer worked ahead. For tests and the profiler.
  int prefetched() const;

 private:
  enum class Slot { Free, Filling, Ready, Held };

  void produce();
  // False when cancelled (stop or a new epoch) part-way.
  bool fill(Batch& batch, const EpochPlan& plan, int64_t index, uint64_t generation);
  void fill_range(Batch& batch, const EpochPlan& plan, int64_t index, int64_t begin, int64_t end,
                  uint64_t generation);
  bool cancelled(uint64_t generation) const noexcept;

  const DataSource& source_;
  const Split split_;
  const BatchSpec spec_;
  const int world_, rank_;
  const SampleTransform transform_;

  mutable std::mutex mutex_;
  std::condition_variable producer_cv_, consumer_cv_;
  EpochPlan plan_;  // guarded by mutex_; the producer works on a copy
  std::array<Batch, 2> buffers_;
  std::array<Slot, 2> slots_{Slot::Free, Slot::Free};
  int64_t next_fill_ = 0;  // batch index the producer fills next
  int64_t next_hand_ = 0;  // batch index next() hands out next
  std::exception_ptr error_;
  // Read without the lock by the filling code so it can give up early.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::thread producer_;  // last: started after everything above exists
};

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// EpochPlan: which samples one rank reads for each batch of one epoch.
#pragma once

#include <cstdint>

#include "data/permutation.h"

namespace tr {

// One global order per (seed, epoch), the same for every world size; the
// global batch b covers positions [b*B, b*B + B) of it and rank r takes the
// r-th contiguous slice of B/world. So the union of the ranks' batches is
// exactly the 1-rank batch, which is what makes data-parallel runs
// comparable bit for bit with single-device runs.
//
// The last partial global batch (remainder R = N mod B) gives every rank
// R/world samples; the R mod world samples after those are dropped so all
// ranks stay in step. With drop_last, or when R < world, there is no partial
// batch. Cheap to copy (no per-sample storage).
class EpochPlan {
 public:
  // Throws UsageError when the batch does not split across the ranks.
  EpochPlan(int64_t samples, int64_t global_batch, int world_size, int rank, bool drop_last,
            bool shuffle, uint64_t seed, int64_t epoch);

  int64_t batches() const noexcept { return batches_; }
  int64_t local_batch() const noexcept { return global_batch_ / world_; }
  // Samples this rank takes from batch b; local_batch() except for a partial last batch.
  int64_t batch_size(int64_t b) const noexcept;
  bool is_partial(int64_t b) const noexcept { return b == full_batches_; }
  // The dataset index of this rank's i-th sample in batch b.
  int64_t sample(int64_t b, int64_t i) const noexcept;
  int64_t epoch() const noexcept { return epoch_; }
  // Samples of the epoch that no rank reads (the dropped tail).
  int64_t dropped() const noexcept;

 private:
  int64_t samples_, global_batch_;
  int world_, rank_;
  bool shuffle_;
  int64_t epoch_;
  int64_t full_batches_, partial_local_, batches_;
  Permutation order_;
};

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// Batch boundaries and rank slices over the epoch's global order.
#include "data/epoch_plan.h"

#include <stdexcept>
#include <string>

#include <renaissance/error.h>

namespace tr {

EpochPlan::EpochPlan(int64_t samples, int64_t global_batch, int world_size, int rank,
                     bool drop_last, bool shuffle, uint64_t seed, int64_t epoch)
    : samples_(samples),
      global_batch_(global_batch),
      world_(world_size),
      rank_(rank),
      shuffle_(shuffle),
      epoch_(epoch),
      order_(static_cast<uint64_t>(samples > 0 ? samples : 0), seed, static_cast<uint64_t>(epoch)) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument("EpochPlan: rank " + std::to_string(rank) + " outside a world of " +
                                std::to_string(world_size));
  }
  if (samples < 1) throw UsageError("the dataset split is empty; expected at least one sample");
  if (global_batch < 1) {
    throw UsageError("global batch is " + std::to_string(global_batch) +
                     "; expected a positive number");
  }
  if (global_batch % world_size != 0) {
    throw UsageError("global batch " + std::to_string(global_batch) + " does not divide by " +
                     std::to_string(world_size) + " devices; expected a multiple of " +
                     std::to_string(world_size));
  }
  full_batches_ = samples / global_batch;
  partial_local_ = drop_last ? 0 : (samples % global_batch) / world_size;
  batches_ = full_batches_ + (partial_local_ > 0 ? 1 : 0);
}

int64_t EpochPlan::batch_size(int64_t b) const noexcept {
  return b < full_batches_ ? local_batch() : (b == full_batches_ ? partial_local_ : 0);
}

int64_t EpochPlan::sample(int64_t b, int64_t i) const noexcept {
  const int64_t position = b * global_batch_ + rank_ * batch_size(b) + i;
  return shuffle_ ? static_cast<int64_t>(order_(static_cast<uint64_t>(position))) : position;
}

int64_t EpochPlan::dropped() const noexcept {
  return samples_ - full_batches_ * global_batch_ - partial_local_ * world_;
}

}  // namespace tr

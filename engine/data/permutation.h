// SPDX-License-Identifier: GPL-3.0-or-later
// A shuffled order of n samples that is computed, not stored: position ->
// sample index in O(1), so every rank evaluates only its own positions and
// all ranks agree without exchanging anything.
#pragma once

#include <array>
#include <cstdint>

namespace tr {

// A keyed bijection on [0, n): a balanced Feistel network on the smallest
// even bit width covering n, with cycle walking back into range (at most
// ~4 steps on average). Six rounds with a mixing round function make the
// order indistinguishable from random for shuffling purposes; it depends
// only on (n, seed, epoch).
class Permutation {
 public:
  Permutation(uint64_t n, uint64_t seed, uint64_t epoch) noexcept;

  uint64_t size() const noexcept { return n_; }
  // The sample at `position` (position < size()).
  uint64_t operator()(uint64_t position) const noexcept;

 private:
  static constexpr int kRounds = 6;
  uint64_t feistel(uint64_t x) const noexcept;

  uint64_t n_ = 0;
  unsigned half_bits_ = 1;
  uint64_t half_mask_ = 1;
  std::array<uint64_t, kRounds> round_keys_{};
};

}  // namespace tr

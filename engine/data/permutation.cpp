// SPDX-License-Identifier: GPL-3.0-or-later
// Feistel-network permutation with cycle walking.
#include "data/permutation.h"

#include <bit>
#include <cstddef>

#include "core/counter_rng.h"

namespace tr {

Permutation::Permutation(uint64_t n, uint64_t seed, uint64_t epoch) noexcept : n_(n) {
  // Smallest even width with 2^bits >= n, and at least 2 so both halves exist.
  unsigned bits = n > 1 ? static_cast<unsigned>(std::bit_width(n - 1)) : 0;
  if (bits < 2) bits = 2;
  if (bits % 2) ++bits;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) {
    const auto words = counter_random(seed, RngStream::Shuffle, epoch, static_cast<uint32_t>(r));
    round_keys_[static_cast<size_t>(r)] = (uint64_t{words[1]} << 32) | words[0];
  }
}

uint64_t Permutation::feistel(uint64_t x) const noexcept {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t key : round_keys_) {
    const uint64_t next = left ^ (mix64(right ^ key) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t position) const noexcept {
  // The Feistel network permutes [0, 2^bits); walking the cycle from
  // `position` until it lands below n restricts it to a bijection on [0, n).
  uint64_t x = feistel(position);
  while (x >= n_) x = feistel(x);
  return x;
}

}  // namespace tr

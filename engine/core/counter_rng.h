// SPDX-License-Identifier: GPL-3.0-or-later
// Counter-based random numbers (data order, augmentation, initial weights):
// a seed gives the same stream on any machine, any thread count and any world
// size, because each value is a pure function of (key, counter) rather than
// of a running state.
#pragma once

#include <array>
#include <cstdint>

namespace tr {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC'11). Checked against the Random123 known-answer vectors in the tests.
struct Philox4x32 {
  using Counter = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;

  static constexpr Counter block(Counter ctr, Key key) noexcept {
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        key[0] += 0x9E3779B9u;
        key[1] += 0xBB67AE85u;
      }
      const uint64_t p0 = uint64_t{0xD2511F53u} * ctr[0];
      const uint64_t p1 = uint64_t{0xCD9E8D57u} * ctr[2];
      ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
             static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    }
    return ctr;
  }

  static constexpr Key key(uint64_t seed) noexcept {
    return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  }
};

// Which consumer draws the numbers; part of every counter so streams never overlap.
enum class RngStream : uint32_t {
  Shuffle = 1,
  Augment = 2,
  SyntheticLabel = 3,
  SyntheticPrototype = 4,
  SyntheticNoise = 5,
  WeightInit = 6,
};

// Four 32-bit values for (seed, stream, a, b): a and b are the caller's
// coordinates (epoch, sample index, pixel block, ...).
constexpr Philox4x32::Counter counter_random(uint64_t seed, RngStream stream, uint64_t a,
                                             uint32_t b = 0) noexcept {
  return Philox4x32::block(
      {static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), b, static_cast<uint32_t>(stream)},
      Philox4x32::key(seed));
}

// Uniform in [0, n) from one 32-bit draw (multiply-shift: bias below n/2^32,
// irrelevant for crop offsets and class labels, and it needs no rejection
// loop, which would break the one-draw-per-decision determinism).
constexpr uint32_t uniform_below(uint32_t random, uint32_t n) noexcept {
  return static_cast<uint32_t>((uint64_t{random} * n) >> 32);
}

// A strong 64-bit finaliser (MurmurHash3 fmix64): the cheap round function
// of the shuffle's Feistel network, where a full Philox block per round
// would cost more than it adds.
constexpr uint64_t mix64(uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace tr

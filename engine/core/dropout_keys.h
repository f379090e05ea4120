// SPDX-License-Identifier: GPL-3.0-or-later
// The keys every dropout mask is drawn from (the Dropout layer's and
// attention's): SplitMix64's finaliser, and one stream per (seed, step,
// layer). Host and device code include it alike, so the CPU kernels and
// their CUDA twins draw the same masks from one definition.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TR_HOST_DEVICE __host__ __device__
#else
#define TR_HOST_DEVICE
#endif

namespace tr {

inline constexpr uint64_t kDropoutGolden = 0x9E3779B97F4A7C15ull;

// SplitMix64's finaliser: a draw is mix(stream + (index + 1) * golden),
// SplitMix64 with its state jumped straight to `index`.
TR_HOST_DEVICE constexpr uint64_t dropout_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One independent stream per (seed, step, layer): chained mixing, so nearby
// steps or layers do not give overlapping sequences.
TR_HOST_DEVICE constexpr uint64_t dropout_stream_key(uint64_t seed, uint64_t step, int layer) {
  uint64_t k = dropout_mix(seed + kDropoutGolden);
  k = dropout_mix(k ^ (step * 0xD1B54A32D192ED03ull));
  return dropout_mix(k ^
                     (static_cast<uint64_t>(static_cast<uint32_t>(layer)) * 0xAEF17502108EF2D9ull));
}

}  // namespace tr

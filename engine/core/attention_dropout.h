// SPDX-License-Identifier: GPL-3.0-or-later
// Attention dropout's mask: which of a training step's attention
// probabilities are dropped, a pure function of (seed, step, layer, sample of
// the global batch, head, query, key). The CPU kernels, their CUDA twins and
// the tests' references all draw it here, so no mask is ever stored: the
// backward draws the forward's again.
#pragma once

#include <cstdint>

#include "core/dropout_keys.h"

namespace tr {

// 32 bits of key for one (sample, head) pair of a layer's step: `pair` is
// sample * heads + head, the sample numbered in the global batch (so the
// mask is the same on any number of ranks).
TR_HOST_DEVICE constexpr uint32_t attention_dropout_key(uint64_t seed, uint64_t step, int layer,
                                                        uint64_t pair) {
  const uint64_t k =
      dropout_mix(dropout_stream_key(seed, step, layer) ^ ((pair + 1) * kDropoutGolden));
  return static_cast<uint32_t>(k >> 32);
}

// The draw of query i and key j (index = i * tokens + j) of a pair: MurmurHash3's
// 32-bit finaliser, a bijection, over the key and the spread index.
TR_HOST_DEVICE constexpr uint32_t attention_dropout_draw(uint32_t key, uint32_t index) {
  uint32_t h = key ^ (index * 0x9E3779B9u);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// A probability is dropped when its draw falls below this (p * 2^32).
TR_HOST_DEVICE constexpr uint32_t attention_dropout_threshold(double p) {
  if (!(p > 0.0)) return 0;
  const double t = p * 4294967296.0 + 0.5;
  return t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<uint32_t>(t);
}

// What a kept probability is multiplied by: 1 / (1 - p).
TR_HOST_DEVICE constexpr float attention_dropout_scale(double p) {
  return p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
}

// A launch's dropout: off, or what its draws are keyed by and kept against.
struct AttentionDropoutArgs {
  bool on = false;
  uint64_t seed = 0;
  int layer = -1;
  uint32_t threshold = 0;  // attention_dropout_threshold(p)
  float scale = 1.0f;      // attention_dropout_scale(p)
};

}  // namespace tr

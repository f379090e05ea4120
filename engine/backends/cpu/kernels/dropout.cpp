// SPDX-License-Identifier: GPL-3.0-or-later
// Dropout on the CPU: counter-based masks (SplitMix64 over the element index).
#include "backends/cpu/kernels/dropout.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"
#include "core/dropout_keys.h"

namespace tr::cpu {

using detail::has_out;
using detail::parallel_ranges;
using detail::store;

namespace {

// The hash costs about what streaming eight floats does (64-bit multiplies
// stay scalar), which the parallel threshold should see.
constexpr int64_t kHashCost = 8;
constexpr int64_t kBlock = 4096;

// Drop when the top 32 bits fall below p * 2^32.
uint64_t drop_threshold(double p) noexcept {
  if (!(p > 0.0)) return 0;
  if (p >= 1.0) return uint64_t{1} << 32;
  return static_cast<uint64_t>(std::llround(p * 4294967296.0));
}

bool keep(uint64_t key, uint64_t index, uint64_t threshold) noexcept {
  return (dropout_mix(key + (index + 1) * kDropoutGolden) >> 32) >= threshold;
}

float keep_scale(double p) noexcept {
  return p >= 1.0 ? 0.0f : static_cast<float>(1.0 / (1.0 - p));
}

// The rows the mask and the features are walked in: per NHW position when the
// mask's channels are padded, else one flat row. Plain locals, because int8
// stores may alias the shape and would stop the loops from vectorising.
struct Rows {
  int64_t count, len, mask_stride;
};

Rows rows_of(const Shape& s, int64_t mask_c) {
  if (mask_c == s.c) return {1, s.elements(), s.elements()};
  return {s.n * s.h * s.w, s.c, mask_c};
}

}  // namespace

bool dropout_keeps(uint64_t seed, uint64_t step, int layer, uint64_t index, double p) noexcept {
  return keep(dropout_stream_key(seed, step, layer), index, drop_threshold(p));
}

void dropout_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, dropout_fwd)) return;
  const Shape& s = a.in[0].shape();
  const float* x = a.in[0].f32();
  float* y = a.out[0].f32();
  int8_t* mask = a.out[1].i8();
  // The mask lives in S_MASK with its channels padded for the GPU; y does not.
  const Rows rows = rows_of(s, a.out[1].desc->padded_c());
  const double p = a.params().p;
  const uint64_t threshold = drop_threshold(p);
  const float scale = keep_scale(p);
  const uint64_t key =
      dropout_stream_key(a.seed, detail::training_step(a), a.node ? a.node->layer : -1);
  const uint64_t base = static_cast<uint64_t>(a.rank) * static_cast<uint64_t>(s.elements());
  const int64_t len = rows.len;
  // Elements [lo, hi) of row r. Two loops: the integer hash, then x * mask *
  // scale as torch computes it (a dropped inf still gives NaN); no branch on
  // a coin flip that would mispredict half the time. Blocks keep the mask
  // of the first loop in L1 for the second when a row is the whole tensor.
  auto run = [&](int64_t r, int64_t lo, int64_t hi) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    int8_t* mr = mask + r * rows.mask_stride;
    // Copies: the int8 stores could alias the captured originals.
    const uint64_t k = key, t = threshold;
    const float sc = scale;
    const uint64_t first = base + static_cast<uint64_t>(r * len);
    for (int64_t b0 = lo; b0 < hi; b0 += kBlock) {
      const int64_t b1 = std::min(hi, b0 + kBlock);
      for (int64_t c = b0; c < b1; ++c)
        mr[c] = static_cast<int8_t>(keep(k, first + static_cast<uint64_t>(c), t));
      for (int64_t c = b0; c < b1; ++c) yr[c] = xr[c] * (static_cast<float>(mr[c]) * sc);
    }
  };
  // The mask is a function of the element index alone, so any split of the
  // rows between threads draws the same one.
  if (rows.count == 1) {
    parallel_ranges(
        len, len * kHashCost, [&](int64_t lo, int64_t hi) { run(0, lo, hi); }, 64);
  } else {
    parallel_ranges(rows.count, rows.count * len * kHashCost, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) run(r, 0, len);
    });
  }
}

void dropout_bwd(const KernelArgs& a) {
  if (!has_out(a, 0)) return;
  if (detail::run_16bit_staged(a, dropout_bwd)) return;
  const int8_t* mask = a.in[0].i8();
  const Rows rows = rows_of(a.in[1].shape(), a.in[0].desc->padded_c());
  const float* dy = a.in[1].f32();
  float* dx = a.out[0].f32();
  const float scale = keep_scale(a.params().p);
  const bool acc = a.accumulate(0);
  const int64_t len = rows.len;
  auto run = [&](int64_t r, int64_t lo, int64_t hi) {
    const int8_t* mr = mask + r * rows.mask_stride + lo;
    const float* gr = dy + r * len + lo;
    const float sc = scale;  // a copy: the stores could alias the captured original
    store(acc, dx + r * len + lo, hi - lo,
          [&](int64_t c) { return gr[c] * (static_cast<float>(mr[c]) * sc); });
  };
  if (rows.count == 1) {
    parallel_ranges(
        len, len, [&](int64_t lo, int64_t hi) { run(0, lo, hi); }, 64);
  } else {
    parallel_ranges(rows.count, rows.count * len, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) run(r, 0, len);
    });
  }
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// OpenMP helpers the CPU kernels share: contiguous ranges per thread, and a
// fixed partition for reductions whose bits must not depend on the thread count.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace tr::cpu::detail {

// Work (elements read or written) below which a kernel stays on its calling
// thread. A team kept busy starts in microseconds, but each stream worker has
// its own team, and on the streams that run a few kernels per step (update,
// zero-grad) its threads have gone to sleep, or wait behind another stream's
// threads for a core: in the engine's profile on 2 cores, clearing 64K floats
// took 3 us on one thread and 30-400 us on two. Half a million elements take
// 50-150 us on one core, enough to pay for a wake.
inline constexpr int64_t kParallelMinWork = int64_t{1} << 19;

// Threads worth using for `work`: each one gets at least half the threshold,
// so a tensor just above it is not split into slivers on many-core machines.
inline int threads_for(int64_t work) {
  if (work < kParallelMinWork) return 1;
  const int64_t useful = work / (kParallelMinWork / 2);
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), useful));
}

// Calls f(lo, hi) on contiguous ranges that together cover [0, n), one per
// thread. Boundaries fall on multiples of `align` items so that two threads
// never write into one cache line (16 floats). For elementwise work only: how
// the range is cut must not matter to the result.
template <class F>
void parallel_ranges(int64_t n, int64_t work, F&& f, int64_t align = 1) {
  if (n <= 0) return;
  const int nt = threads_for(work);
  if (nt <= 1) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t units = (n + align - 1) / align;
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), k = omp_get_num_threads();
    const int64_t lo = std::min(n, units * t / k * align);
    const int64_t hi = std::min(n, units * (t + 1) / k * align);
    if (lo < hi) f(lo, hi);
  }
}

// Flat float arrays: ranges cut on cache lines.
template <class F>
void parallel_floats(int64_t n, F&& f, int64_t cost_per_element = 1) {
  parallel_ranges(n, n * cost_per_element, f, 16);
}

// Reductions: [0, n) is cut into parts whose number depends on the sizes
// alone, never on the thread count, and each part sums its own range in a fixed
// order. Combining the partials in part order then gives the same bits on one
// thread or many, and whatever the scheduling.
inline constexpr int kMaxParts = 16;

// One part where the kernel stays serial anyway, else kMaxParts (fewer only
// when there are fewer items than that).
inline int reduction_parts(int64_t n, int64_t work) {
  if (work < kParallelMinWork) return 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kMaxParts, n)));
}

inline int64_t part_begin(int64_t n, int parts, int p) {
  return n * p / parts;
}

// Calls f(p, lo, hi) for every part p of [0, n), parts spread over the threads.
template <class F>
void for_each_part(int64_t n, int parts, F&& f) {
  const int nt = std::min(parts, omp_get_max_threads());
  if (nt <= 1) {
    for (int p = 0; p < parts; ++p) f(p, part_begin(n, parts, p), part_begin(n, parts, p + 1));
    return;
  }
#pragma omp parallel for schedule(static) num_threads(nt)
  for (int p = 0; p < parts; ++p) f(p, part_begin(n, parts, p), part_begin(n, parts, p + 1));
}

}  // namespace tr::cpu::detail

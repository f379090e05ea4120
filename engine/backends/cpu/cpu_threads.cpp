// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/cpu_threads.h"

#include <omp.h>

#include <atomic>

extern "C" void openblas_set_num_threads(int num_threads);

namespace tr::cpu {

namespace {

// OpenMP's thread count is per calling thread, so the setting is kept here and
// every stream worker applies it before it runs a kernel. 0: the default.
std::atomic<int> requested{0};
thread_local int applied = 0;

}  // namespace

void set_cpu_threads(int threads) {
  requested = threads;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int cpu_threads() {
  const int r = requested.load();
  return r > 0 ? r : omp_get_max_threads();
}

void apply_cpu_threads() {
  const int r = requested.load(std::memory_order_relaxed);
  if (r > 0 && r != applied) {
    omp_set_num_threads(r);
    applied = r;
  }
}

}  // namespace tr::cpu

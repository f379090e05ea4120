// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/cpu_threads.h"

#include <omp.h>

extern "C" void openblas_set_num_threads(int num_threads);

namespace tr::cpu {

void set_cpu_threads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int cpu_threads() {
  return omp_get_max_threads();
}

}  // namespace tr::cpu

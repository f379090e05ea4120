// SPDX-License-Identifier: GPL-3.0-or-later
// The one symbol librenaissance-cpu-avx512.so exports (kernel_builds.h): the
// table of this build of our own kernels.
#include "backends/cpu/kernel_builds.h"
#include "tr_build_info.h"

extern "C" __attribute__((visibility("default"))) const tr::cpu::OwnKernels*
tr_cpu_avx512_kernels() {
  static const tr::cpu::OwnKernels table{tr::cpu::kOwnKernelsAbi, TR_VERSION "+" TR_GIT_COMMIT,
                                         "AVX-512", &tr::cpu::own_compute_kernel,
                                         &tr::cpu::own_range_kernel};
  return &table;
}

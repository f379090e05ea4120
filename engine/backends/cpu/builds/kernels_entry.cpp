// SPDX-License-Identifier: GPL-3.0-or-later
// The one symbol each optional build of our own kernels exports
// (kernel_builds.h): the table of that build. TR_KERNELS_ISA names the build.
#include "backends/cpu/kernel_builds.h"
#include "tr_build_info.h"

extern "C" __attribute__((visibility("default"))) const tr::cpu::OwnKernels* tr_cpu_own_kernels() {
  static const tr::cpu::OwnKernels table{tr::cpu::kOwnKernelsAbi, TR_VERSION "+" TR_GIT_COMMIT,
                                         TR_KERNELS_ISA, &tr::cpu::own_compute_kernel,
                                         &tr::cpu::own_range_kernel};
  return &table;
}

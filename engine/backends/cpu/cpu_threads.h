// SPDX-License-Identifier: GPL-3.0-or-later
// How many threads the CPU kernels use (oneDNN through OpenMP, and OpenBLAS).
#pragma once

namespace tr::cpu {

void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace tr::cpu

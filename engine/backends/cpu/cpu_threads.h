// SPDX-License-Identifier: GPL-3.0-or-later
// How many threads the CPU kernels use (oneDNN through OpenMP, and OpenBLAS).
#pragma once

namespace tr::cpu {

// Process-wide, like the OpenMP runtime it configures.
void set_cpu_threads(int threads);
int cpu_threads();
// Applies the setting to the calling thread (stream workers call it before
// each task, because OpenMP's count is per thread).
void apply_cpu_threads();

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU's bfloat16 instructions, from CPUID and what the OS saves: AVX-512
// BF16 (conversions and dot products) and AMX (BF16 matrix tiles). Either
// lets oneDNN run BF16 convolutions and matrix products. And whether the CPU
// runs the AVX2 and AVX-512 builds of our own kernels.
#pragma once

#include <renaissance/cpu_bf16.h>

namespace tr {

// Asked once; the answer does not change while the process runs.
CpuBf16 detect_cpu_bf16() noexcept;

// Whether the CPU runs x86-64-v4 code (AVX-512 F, BW, CD, DQ and VL on top
// of AVX2 and FMA, with the OS saving the AVX-512 state).
bool cpu_runs_x86_64_v4() noexcept;
// Whether it runs x86-64-v3 code (AVX2, FMA, F16C, BMI1, BMI2, LZCNT and
// MOVBE, with the OS saving the AVX state).
bool cpu_runs_x86_64_v3() noexcept;

}  // namespace tr

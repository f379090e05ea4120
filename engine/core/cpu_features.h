// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU's bfloat16 instructions, from CPUID and what the OS saves: AVX-512
// BF16 (conversions and dot products) and AMX (BF16 matrix tiles). Either
// lets oneDNN run BF16 convolutions and matrix products.
#pragma once

#include <renaissance/devices.h>

namespace tr {

// Asked once; the answer does not change while the process runs.
CpuBf16 detect_cpu_bf16() noexcept;

}  // namespace tr

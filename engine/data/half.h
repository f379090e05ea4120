// SPDX-License-Identifier: GPL-3.0-or-later
// IEEE binary16 <-> binary32 conversion on the host (AMP staging, FP16 batches).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tr {

// Round to nearest, ties to even, like the GPU's __float2half_rn and F16C:
// |x| >= 65520 becomes inf, values below 2^-24 / 2 flush to (signed) zero,
// subnormals are kept, NaN stays NaN (quieted, sign and top payload bits kept).
uint16_t fp32_to_fp16(float value) noexcept;
// Exact: every binary16 value is representable in binary32.
float fp16_to_fp32(uint16_t bits) noexcept;

void fp32_to_fp16(const float* in, uint16_t* out, size_t count) noexcept;
void fp16_to_fp32(const uint16_t* in, float* out, size_t count) noexcept;

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// How the CUDA kernels see a feature-like operand without the engine's
// headers: its storage type and its rows. Under AMP (BF16) features and
// gradient slots are FP16 (bfloat16) whose channel dimension is padded
// (DTensor::padded_c), so a kernel walks `cols` values a row, rows `stride`
// elements apart; FP32 ones are compact (stride == cols). Arithmetic is FP32
// for every storage type.
#pragma once

#include <cstdint>

namespace tr::cuda {

enum class Elem : uint8_t { F32, F16, BF16 };

constexpr uint64_t elem_bytes(Elem e) noexcept {
  return e == Elem::F32 ? 4 : 2;
}

// Rows of `cols` values, `stride` (>= cols) elements apart; the lanes
// cols..stride-1 of a row are padding, which kernels write as zero.
struct FeatureView {
  void* data = nullptr;
  int64_t cols = 1, stride = 1;
};

}  // namespace tr::cuda

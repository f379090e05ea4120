// SPDX-License-Identifier: GPL-3.0-or-later
// Element types the engine stores in device memory, with their sizes and names.
#pragma once

#include <cstdint>
#include <string_view>

namespace tr {

// (BF16 last: the values are stored in checkpoints.)
enum class DType : uint8_t { FP32, FP16, INT8, INT32, BF16 };

// The two 16-bit float types: the same storage rules (half an FP32 slot,
// channels padded alike), different bits.
constexpr bool is_16bit_float(DType t) noexcept {
  return t == DType::FP16 || t == DType::BF16;
}

constexpr uint32_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::FP32:
      return 4;
    case DType::FP16:
    case DType::BF16:
      return 2;
    case DType::INT8:
      return 1;
    case DType::INT32:
      return 4;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::FP32:
      return "fp32";
    case DType::FP16:
      return "fp16";
    case DType::INT8:
      return "int8";
    case DType::INT32:
      return "int32";
    case DType::BF16:
      return "bf16";
  }
  return "?";
}

}  // namespace tr

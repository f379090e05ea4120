// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/dtensor.h>

#include "core/align.h"

namespace tr {

uint32_t DTensor::cuda_alignment(DType dtype, Region region) noexcept {
  if (is_16bit_float(dtype)) {
    if (region == Region::I_A_DATA || region == Region::I_B_DATA) return 4;
    if (region == Region::F_FEATURE_FP16 || region == Region::F_GRAD_SLOT_FP16 ||
        region == Region::F_FEATURE_BF16 || region == Region::F_GRAD_SLOT_BF16)
      return 8;
  }
  if (dtype == DType::INT8 && region == Region::S_MASK) return 8;
  return 1;
}

uint64_t DTensor::slot_bytes_for(const Shape& shape, DType dtype, Region region,
                                 bool pad_channels) noexcept {
  const uint64_t padded =
      align_up(static_cast<uint64_t>(shape.c), pad_channels ? cuda_alignment(dtype, region) : 1);
  const uint64_t elems = static_cast<uint64_t>(shape.n * shape.h * shape.w) * padded;
  switch (dtype) {
    case DType::FP16:
    case DType::BF16:
      return align256(elems * 2 + 16);
    case DType::INT8:
      return align256(elems + 16);
    case DType::FP32:
    case DType::INT32:
      return 2 * align256(elems * 2 + 16);
  }
  return 0;
}

std::string Placement::str() const {
  switch (kind) {
    case PlacementKind::Replicate:
      return "R";
    case PlacementKind::Shard:
      return "S(" + std::to_string(dim) + ")";
    case PlacementKind::Partial:
      return "P";
  }
  return "?";
}

int64_t DTensor::padded_c() const noexcept {
  return static_cast<int64_t>(align_up(static_cast<uint64_t>(shape.c), alignment()));
}

std::array<int64_t, 4> DTensor::device_strides() const noexcept {
  const int64_t c = padded_c();
  return {shape.h * shape.w * c, shape.w * c, c, 1};
}

std::array<int64_t, 4> DTensor::host_strides() const noexcept {
  return {shape.h * shape.w * shape.c, shape.w * shape.c, shape.c, 1};
}

int64_t DTensor::element_index(int64_t n, int64_t h, int64_t w, int64_t c) const noexcept {
  if (!is_blocked()) {
    const auto s = device_strides();
    return n * s[0] + h * s[1] + w * s[2] + c;
  }
  const int64_t b = channel_block;
  return (((n * (shape.c / b) + c / b) * shape.h + h) * shape.w + w) * b + c % b;
}

uint64_t DTensor::device_bytes() const noexcept {
  return static_cast<uint64_t>(shape.n * shape.h * shape.w * padded_c()) * dtype_size(dtype);
}

}  // namespace tr

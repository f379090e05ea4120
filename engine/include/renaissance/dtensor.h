// SPDX-License-Identifier: GPL-3.0-or-later
// DTensor: a pure descriptor of a tensor in a rank's arena. It owns no memory
// and holds no pointer; the same id means the same offset on every rank and in
// every shape variant. The layout rules (alignment, padded C, slot bytes) are
// exact because RANGE ops and graph capture depend on them.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <renaissance/dtype.h>
#include <renaissance/region.h>
#include <renaissance/shape.h>

namespace tr {

using DTensorId = int32_t;
inline constexpr DTensorId kNoTensor = -1;

// How a tensor lies over the data-parallel ranks (the `data` dimension of
// the device mesh): each rank holds all of it (Replicate), its share of it
// along `dim` (Shard), or its own addend of a sum that a collective has yet
// to take (Partial: the gradients before their bucket's all-reduce).
enum class PlacementKind : uint8_t { Replicate, Shard, Partial };

struct Placement {
  PlacementKind kind = PlacementKind::Replicate;
  int dim = 0;              // Shard: which dimension of the (global) tensor is split
  std::string str() const;  // "R", "S(0)", "P"
  bool operator==(const Placement&) const = default;
};

struct DTensor {
  DTensorId id = kNoTensor;
  std::string name;  // "conv1.weight", "relu2.out", ...
  int owner = -1;    // index of the model node that owns it, -1 for engine tensors
  Shape shape;
  DType dtype = DType::FP32;
  Region region = Region::T_SCRATCH;
  uint64_t offset = 0;      // set by MemoryPlan::finalize
  uint64_t slot_bytes = 0;  // >= slot_bytes_for(shape, dtype, region)
  // Over the data-parallel ranks; `shape` is what one rank holds. A shard's
  // whole tensor has `global_elements` (0: not a shard).
  Placement placement;
  int64_t global_elements = 0;
  // Over the mesh's `tensor` dimension (tensor parallel): Replicate, or
  // Shard(dim): `shape` is this rank's part of a whole tensor whose `dim`
  // is `tensor_blocks` equal blocks, each split evenly over the tensor ranks
  // (an attention projection's queries, keys and values each by heads: 3
  // blocks). plan/tensor_shards.h maps the part into the whole.
  Placement tensor_placement;
  int tensor_blocks = 1;
  // Whether the device pads 16-bit channels and masks as CUDA's kernels need
  // (cuda_alignment). The CPU's kernels take any C, so CPU plans store every
  // tensor compact: a 1-channel BF16 map is not 8 times its size.
  bool pad_channels = true;
  // Channels in blocks (CPU feature maps only, C a multiple of it): the bytes
  // hold [N, C / b, H, W, b], the layout oneDNN's direct convolutions run
  // fastest on (b = 8 for AVX2, 16 for AVX-512). 0: channels innermost,
  // [N, H, W, C]. The same bytes either way, and the same values in them.
  int channel_block = 0;

  bool is_blocked() const noexcept { return channel_block > 0; }
  // The position of element (n, h, w, c) in the device layout, in elements.
  int64_t element_index(int64_t n, int64_t h, int64_t w, int64_t c) const noexcept;
  uint32_t alignment() const noexcept { return pad_channels ? cuda_alignment(dtype, region) : 1; }
  int64_t padded_c() const noexcept;
  // Strides in elements for N, H, W, C. Device strides use the padded C.
  std::array<int64_t, 4> device_strides() const noexcept;
  std::array<int64_t, 4> host_strides() const noexcept;
  bool is_compact() const noexcept { return padded_c() == shape.c; }
  // Bytes the device layout actually uses (with padding, without the slot's spare).
  uint64_t device_bytes() const noexcept;

  // Channel alignment on the device: FP16 in the input buffers -> 4, FP16
  // features and gradient slots -> 8, INT8 masks -> 8, anything else -> 1.
  static uint32_t cuda_alignment(DType dtype, Region region) noexcept;
  // Slot size: elements = N*H*W*padded_c; FP16 -> align256(2e + 16);
  // INT8 -> align256(e + 16); 4-byte types -> 2 * align256(2e + 16), which
  // makes every FP32 slot exactly twice the FP16 slot of the same shape.
  static uint64_t slot_bytes_for(const Shape& shape, DType dtype, Region region,
                                 bool pad_channels = true) noexcept;
};

}  // namespace tr

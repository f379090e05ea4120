// SPDX-License-Identifier: GPL-3.0-or-later
// Where a tensor-parallel rank's part of a tensor lies in the whole tensor
// (DTensor::tensor_placement): the initial weights and a checkpoint hold
// whole tensors, each tensor rank holds its part, and these move values
// between the two. A part is `tensor_blocks` runs of the sharded dimension,
// one from each block: a QKV projection's part is its heads' queries, keys
// and values.
#pragma once

#include <cstdint>
#include <vector>

#include <renaissance/dtensor.h>

namespace tr {

// True when `d` is split over the tensor ranks (tensor_ranks > 1 and Shard).
bool is_tensor_shard(const DTensor& d, int tensor_ranks) noexcept;
// The whole tensor's shape (`d.shape` when it is not a shard).
Shape whole_shape(const DTensor& d, int tensor_ranks) noexcept;
// Tensor rank `rank`'s part of `whole` (whole_shape's elements, compact NHWC).
std::vector<float> tensor_part(const DTensor& d, int tensor_ranks, int rank,
                               const std::vector<float>& whole);
// Writes `part` (d.shape's elements) into its place in `whole`.
void put_tensor_part(const DTensor& d, int tensor_ranks, int rank, const std::vector<float>& part,
                     std::vector<float>& whole);

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/tensor_shards.h"

#include <algorithm>
#include <stdexcept>

namespace tr {

namespace {

int64_t& dim_of(Shape& s, int dim) {
  return dim == 0 ? s.n : dim == 1 ? s.h : dim == 2 ? s.w : s.c;
}

// The part as runs of `inner` elements: for each of `outer` leading
// indices and each local index j of the sharded dimension, the whole
// tensor's index of that run.
template <typename Visit>
void each_run(const DTensor& d, int tensor_ranks, int rank, Visit visit) {
  const int dim = d.tensor_placement.dim;
  Shape local = d.shape;
  const int64_t dl = dim_of(local, dim);
  const int64_t dw = dl * tensor_ranks;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; ++k) outer *= dim_of(local, k);
  for (int k = dim + 1; k < 4; ++k) inner *= dim_of(local, k);
  const int64_t per_block = dl / d.tensor_blocks;
  if (per_block * d.tensor_blocks != dl || rank < 0 || rank >= tensor_ranks)
    throw std::logic_error("tensor part of " + d.name + ": " + std::to_string(dl) +
                           " does not split into " + std::to_string(d.tensor_blocks) + " blocks");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < dl; ++j) {
      const int64_t block = j / per_block, within = j % per_block;
      const int64_t g = block * per_block * tensor_ranks + rank * per_block + within;
      visit((o * dl + j) * inner, (o * dw + g) * inner, inner);
    }
}

}  // namespace

bool is_tensor_shard(const DTensor& d, int tensor_ranks) noexcept {
  return tensor_ranks > 1 && d.tensor_placement.kind == PlacementKind::Shard;
}

Shape whole_shape(const DTensor& d, int tensor_ranks) noexcept {
  Shape s = d.shape;
  if (is_tensor_shard(d, tensor_ranks)) dim_of(s, d.tensor_placement.dim) *= tensor_ranks;
  return s;
}

std::vector<float> tensor_part(const DTensor& d, int tensor_ranks, int rank,
                               const std::vector<float>& whole) {
  if (!is_tensor_shard(d, tensor_ranks)) return whole;
  if (static_cast<int64_t>(whole.size()) != whole_shape(d, tensor_ranks).elements())
    throw std::logic_error("tensor part of " + d.name + ": " + std::to_string(whole.size()) +
                           " values for a whole of " + whole_shape(d, tensor_ranks).str());
  std::vector<float> part(static_cast<size_t>(d.shape.elements()));
  each_run(d, tensor_ranks, rank, [&](int64_t at, int64_t from, int64_t n) {
    std::copy_n(whole.begin() + from, n, part.begin() + at);
  });
  return part;
}

void put_tensor_part(const DTensor& d, int tensor_ranks, int rank, const std::vector<float>& part,
                     std::vector<float>& whole) {
  if (!is_tensor_shard(d, tensor_ranks)) {
    whole = part;
    return;
  }
  whole.resize(static_cast<size_t>(whole_shape(d, tensor_ranks).elements()));
  each_run(d, tensor_ranks, rank, [&](int64_t at, int64_t to, int64_t n) {
    std::copy_n(part.begin() + at, n, whole.begin() + to);
  });
}

}  // namespace tr

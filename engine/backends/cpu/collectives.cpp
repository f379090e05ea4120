// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/collectives.h"

#include <cstring>

namespace tr::cpu {

Collectives::Collectives(int world)
    : world_(world), buffers_(static_cast<size_t>(world), nullptr), barrier_(world) {}

void Collectives::all_reduce(int rank, float* data, uint64_t count, bool mean) {
  if (world_ == 1) return;
  buffers_[static_cast<size_t>(rank)] = data;
  barrier_.arrive_and_wait();
  // Each rank reduces its own slice and writes it to every rank: the work is
  // spread like a reduce-scatter followed by an all-gather.
  const uint64_t w = static_cast<uint64_t>(world_);
  const uint64_t begin = count * static_cast<uint64_t>(rank) / w;
  const uint64_t end = count * static_cast<uint64_t>(rank + 1) / w;
  const float scale = mean ? 1.0f / static_cast<float>(world_) : 1.0f;
  for (uint64_t i = begin; i < end; ++i) {
    float sum = 0.0f;
    for (int r = 0; r < world_; ++r)
      sum += static_cast<float*>(buffers_[static_cast<size_t>(r)])[i];
    if (mean) sum *= scale;
    for (int r = 0; r < world_; ++r) static_cast<float*>(buffers_[static_cast<size_t>(r)])[i] = sum;
  }
  barrier_.arrive_and_wait();
}

void Collectives::broadcast(int rank, void* data, uint64_t bytes, int root) {
  if (world_ == 1) return;
  buffers_[static_cast<size_t>(rank)] = data;
  barrier_.arrive_and_wait();
  if (rank != root) std::memcpy(data, buffers_[static_cast<size_t>(root)], bytes);
  barrier_.arrive_and_wait();
}

}  // namespace tr::cpu

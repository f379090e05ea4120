// SPDX-License-Identifier: GPL-3.0-or-later
// In-process collectives between the rank threads of one CPU backend, with
// NCCL's semantics: every rank calls the same collectives in the same order,
// buffers are reduced in place, and the result is identical on every rank
// (ranks are summed in rank order, so it is also deterministic).
#pragma once

#include <barrier>
#include <cstdint>
#include <vector>

namespace tr::cpu {

class Collectives {
 public:
  explicit Collectives(int world);
  int world() const noexcept { return world_; }
  // In-place sum (or mean) of `count` floats at `data` across all ranks.
  void all_reduce(int rank, float* data, uint64_t count, bool mean);
  // Copies rank `root`'s `bytes` at `data` into every other rank's `data`.
  void broadcast(int rank, void* data, uint64_t bytes, int root);

 private:
  int world_;
  std::vector<void*> buffers_;
  std::barrier<> barrier_;
};

}  // namespace tr::cpu

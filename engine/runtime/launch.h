// SPDX-License-Identifier: GPL-3.0-or-later
// Launch: one unit of work a backend puts on a stream (a kernel, a copy, a
// collective or a host function), with the arena bytes it reads and writes so
// a checking backend can prove that every reader runs after its writer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <renaissance/graph_id.h>
#include <renaissance/memory_plan.h>
#include <renaissance/profile.h>
#include <renaissance/stream_kind.h>
#include "runtime/kernel_args.h"

namespace tr {

enum class LaunchKind : uint8_t { KERNEL, COPY_H2D, COPY_D2H, COLLECTIVE, HOST_FUNC };

struct Footprint {
  std::vector<ByteRange> reads;
  std::vector<ByteRange> writes;
  // The tensor each entry holds, for a checker that follows which tensor the
  // bytes hold (same length as reads/writes; nullptr for a span of regions).
  std::vector<const DTensor*> read_tensors;
  std::vector<const DTensor*> write_tensors;
  void read(ByteRange r, const DTensor* t = nullptr) {
    reads.push_back(r);
    read_tensors.push_back(t);
  }
  void write(ByteRange r, const DTensor* t = nullptr) {
    writes.push_back(r);
    write_tensors.push_back(t);
  }
  // True when this footprint and `later` touch the same bytes in a way that
  // orders them: read-after-write, write-after-read or write-after-write.
  bool conflicts_with(const Footprint& later) const;
};

struct Launch {
  LaunchKind kind = LaunchKind::KERNEL;
  const KernelArgs* args = nullptr;  // KERNEL and COLLECTIVE; owned by the caller, must outlive it
  uint64_t offset = 0;               // COPY_*: arena offset
  void* host = nullptr;              // COPY_*: host memory (fixed, so copies can be captured)
  uint64_t bytes = 0;                // COPY_*
  // COPY_H2D into a tensor with padded channels (cudaMemcpy2DAsync): `rows`
  // compact host rows of bytes / rows each, `pitch` bytes apart in the arena.
  // 0: one contiguous copy.
  uint64_t rows = 0, pitch = 0;
  std::function<void()> host_func;  // HOST_FUNC
  Footprint footprint;
  LaunchTag tag;
};

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The processes of one run, as the CPU backend's collectives reach them when
// its ranks span processes (and machines): each process drives the same
// number of ranks, process p's being global ranks p * local .. p * local +
// local - 1. The network layer implements it over Gloo (net/gloo_mesh.h);
// the backend sees only this, so it builds without the network.
#pragma once

#include <cstddef>

namespace tr {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int processes() const = 0;
  virtual int process_rank() const = 0;
  // Every process's `bytes` at `data` into `out`, process p's at p * bytes;
  // every process calls it at the same point of `channel`'s sequence (calls
  // on different channels may run at once, from different threads). Throws
  // std::runtime_error naming the process that failed, or stopped answering
  // within the group's timeout.
  virtual void all_gather(const void* data, size_t bytes, void* out, int channel) = 0;
  // Process j's j-th `bytes` of `data` (processes() of them) into every
  // process's `out`, at j * bytes: the exchange of a reduce-scatter.
  virtual void all_to_all(const void* data, size_t bytes, void* out, int channel) = 0;
};

}  // namespace tr

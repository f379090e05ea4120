// SPDX-License-Identifier: GPL-3.0-or-later
// Collectives between the processes of one run over Gloo's TCP transport
// (Debian's libgloo, the library PyTorch's CPU DDP uses): a Gloo pair from
// this process to every other, whose addresses travel through the run's TCP
// rendezvous (tcp_rendezvous.h) as each node's own blob. Debian's Gloo has
// no TCP store, and the rendezvous starts every multi-node run already (it
// hands out NCCL's id): one way to start, whatever carries the collectives.
// It moves bytes only: the CPU backend's collectives (backends/cpu/
// collectives.h) take every sum over it in rank order, as in one process.
// Each node sends its parts straight to every other (no ring forwards a
// part): a node that died or stopped sending is the one whose part is
// missing when the timeout runs out, and the error names it.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/process_group.h"

namespace tr::net {

// A collective between processes that failed: a node that died, stopped
// answering within the timeout, or was never reachable.
class MeshError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GlooMesh final : public ProcessGroup {
 public:
  // This node's side of a pair to each of the other `nodes - 1`, listening
  // on `host` (an address of this machine that the others reach).
  GlooMesh(int nodes, int node_rank, const std::string& host, std::chrono::milliseconds timeout);
  ~GlooMesh() override;
  GlooMesh(const GlooMesh&) = delete;
  GlooMesh& operator=(const GlooMesh&) = delete;

  int nodes() const noexcept { return nodes_; }
  int node_rank() const noexcept { return node_rank_; }
  int processes() const override { return nodes_; }
  int process_rank() const override { return node_rank_; }

  // What the rendezvous publishes for this node (RendezvousOptions::node_blob).
  const std::string& addresses() const noexcept { return addresses_; }
  // Connects every pair from the blobs the rendezvous published
  // (NodeLayout::node_blobs, one a node); throws MeshError naming a node
  // whose blob is malformed or that cannot be reached.
  void connect(const std::vector<std::string>& node_blobs);

  // Every node's `bytes` at `data` into `out`, node r's at r * bytes; calls
  // on different channels (Gloo's tags) may run at once.
  void all_gather(const void* data, size_t bytes, void* out, int channel = 0) override;
  void all_to_all(const void* data, size_t bytes, void* out, int channel = 0) override;

 private:
  class Context;
  // Sends this node's part for node j (`data` + j * `step`, `bytes` long:
  // `step` 0 sends the same to all) and receives node j's into `out` +
  // j * bytes, for every j at once; throws MeshError naming the nodes whose
  // parts did not come within the timeout.
  void exchange(const char* what, const void* data, size_t bytes, size_t step, void* out,
                int channel);
  // Rethrows Gloo's error of collective `what` as a MeshError naming the
  // node it concerns where its message says, or `late` (the nodes whose
  // parts had not come) when it does not.
  [[noreturn]] void failed(const char* what, const std::exception& e,
                           const std::vector<int>& late = {}) const;

  int nodes_, node_rank_;
  std::chrono::milliseconds timeout_;
  std::string addresses_;
  std::vector<std::string> peer_names_;  // per node: its pair's address as Gloo prints it
  std::shared_ptr<Context> context_;
};

}  // namespace tr::net

// SPDX-License-Identifier: GPL-3.0-or-later
// Collectives between the processes of one run over Gloo's TCP transport
// (Debian's libgloo, the library PyTorch's CPU DDP uses): a Gloo pair from
// this process to every other, whose addresses travel through the run's TCP
// rendezvous (tcp_rendezvous.h) as each node's own blob. Debian's Gloo has
// no TCP store, and the rendezvous starts every multi-node run already (it
// hands out NCCL's id): one way to start, whatever carries the collectives.
// It moves bytes only: the CPU backend's collectives (backends/cpu/
// collectives.h) take every sum over it in rank order, as in one process.
// Every wait is bounded by the timeout; a failure names the node it can.
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
  // Rethrows Gloo's error of collective `what` as a MeshError naming the
  // node it concerns where its message says.
  [[noreturn]] void failed(const char* what, const std::exception& e) const;

  int nodes_, node_rank_;
  std::chrono::milliseconds timeout_;
  std::string addresses_;
  std::vector<std::string> peer_names_;  // per node: its pair's address as Gloo prints it
  std::shared_ptr<Context> context_;
};

}  // namespace tr::net

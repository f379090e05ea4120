// SPDX-License-Identifier: GPL-3.0-or-later
// The TCP rendezvous that starts one training run across machines (one
// process a node): node 0 listens on HOST:PORT, every other node connects,
// says who it is (node rank, local rank count, a fingerprint of what it
// trains, an opaque blob of its own: its Gloo addresses), node 0 checks
// that they agree, publishes an opaque blob (the ncclUniqueId), every
// node's own blob and the layout of global ranks, and a final barrier tells
// every node that all have joined. Plain POSIX sockets, no CUDA: it builds
// and is tested everywhere. The protocol is described in docs/multi-node.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <renaissance/error.h>

namespace tr::net {

// A rendezvous that could not complete: a node that never came, nodes that
// disagree, an address that cannot be used. The message says which and how
// to fix it.
class RendezvousError : public UsageError {
 public:
  using UsageError::UsageError;
};

struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string str() const;  // "host:port", "[v6]:port"
};

// "HOST:PORT" or "[IPv6]:PORT"; port 0 only with `allow_any_port` (tests
// bind an ephemeral port). Throws UsageError naming `option` and the text.
Endpoint parse_endpoint(const std::string& text, const std::string& option = "--rendezvous",
                        bool allow_any_port = false);

// This machine's address on the route to `e` (the one the other nodes
// reach it by when they reach `e` alike); throws RendezvousError.
std::string local_address_towards(const Endpoint& e);

struct RendezvousOptions {
  std::string address;      // HOST:PORT where node 0 listens (and the others connect)
  int nodes = 1;            // machines (processes) taking part
  int node_rank = 0;        // this one's, 0..nodes-1
  int local_ranks = 1;      // ranks (devices) this node drives; every node must have the same
  std::string fingerprint;  // every node must pass the same (e.g. a hash of the compiled plan)
  std::string blob;         // node 0: published to every node
  std::string node_blob;    // every node: its own, published to every node
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

struct NodeLayout {
  int nodes = 1;
  int node_rank = 0;
  int world = 1;                        // global ranks over all nodes
  std::vector<int> local_ranks;         // per node
  std::vector<int> first_rank;          // per node: the global rank of its local rank 0
  std::string blob;                     // node 0's
  std::vector<std::string> node_blobs;  // per node: its RendezvousOptions::node_blob
  int first_global_rank() const { return first_rank.at(static_cast<size_t>(node_rank)); }
};

// Node 0's side, in two steps so that the port is bound (and known, for an
// ephemeral one) before anything waits. Throws RendezvousError when the
// address is bad or in use.
class RendezvousServer {
 public:
  explicit RendezvousServer(RendezvousOptions options);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  uint16_t port() const noexcept { return port_; }
  // Waits for every other node (until the timeout), checks them, publishes
  // the layout and runs the barrier. Throws RendezvousError (and tells every
  // connected node why) when a node is missing, twice, or disagrees.
  NodeLayout run();

 private:
  RendezvousOptions options_;
  Endpoint endpoint_;
  int listener_ = -1;
  uint16_t port_ = 0;
};

// A node other than 0: connects (retrying while node 0 starts, until the
// timeout), joins and returns the layout once every node has joined.
// Throws RendezvousError with node 0's reason when it refuses.
NodeLayout join_rendezvous(const RendezvousOptions& options);

// Either side, by options.node_rank; one node: the trivial layout, no network.
NodeLayout rendezvous(const RendezvousOptions& options);

}  // namespace tr::net

// SPDX-License-Identifier: GPL-3.0-or-later
#include "net/gloo_mesh.h"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

namespace tr::net {

namespace {

// A node's blob: for every other node in node order, the length (4 bytes,
// big-endian) and the bytes of the address of its pair to that node.
void put_entry(std::string& out, const std::vector<char>& bytes) {
  const auto n = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift & 0xff));
  out.append(bytes.begin(), bytes.end());
}

// The entries of `blob`; empty when it is malformed or has not `count`.
std::vector<std::vector<char>> entries_of(const std::string& blob, int count) {
  std::vector<std::vector<char>> out;
  size_t at = 0;
  while (at + 4 <= blob.size()) {
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i)
      n = n << 8 | static_cast<uint8_t>(blob[at + static_cast<size_t>(i)]);
    at += 4;
    if (n > blob.size() - at) return {};
    out.emplace_back(blob.begin() + static_cast<long>(at),
                     blob.begin() + static_cast<long>(at + n));
    at += n;
  }
  if (at != blob.size() || static_cast<int>(out.size()) != count) return {};
  return out;
}

std::string seconds(std::chrono::milliseconds t) {
  return std::to_string(t.count() / 1000) + "." + std::to_string(t.count() % 1000 / 100) + " s";
}

}  // namespace

// A Gloo context whose pairs GlooMesh makes and connects itself, from the
// addresses the rendezvous carried (Gloo's own full-mesh connect needs one
// of its stores).
class GlooMesh::Context : public gloo::Context {
 public:
  Context(int node_rank, int nodes, std::shared_ptr<gloo::transport::Device> device)
      : gloo::Context(node_rank, nodes) {
    device_ = std::move(device);
    transportContext_ = device_->createContext(node_rank, nodes);
  }
  gloo::transport::Context& transport() { return *transportContext_; }
};

GlooMesh::GlooMesh(int nodes, int node_rank, const std::string& host,
                   std::chrono::milliseconds timeout)
    : nodes_(nodes), node_rank_(node_rank), timeout_(timeout) {
  if (nodes < 1 || node_rank < 0 || node_rank >= nodes)
    throw std::invalid_argument("GlooMesh: node rank " + std::to_string(node_rank) +
                                " outside 0.." + std::to_string(nodes - 1));
  if (timeout.count() <= 0) throw std::invalid_argument("GlooMesh: the timeout must be positive");
  // Gloo writes to its sockets without MSG_NOSIGNAL: a dead peer must be an
  // error to report, not a SIGPIPE that ends this process unannounced.
  std::signal(SIGPIPE, SIG_IGN);
  gloo::transport::tcp::attr attr;
  attr.hostname = host;
  try {
    context_ =
        std::make_shared<Context>(node_rank, nodes, gloo::transport::tcp::CreateDevice(attr));
    context_->setTimeout(timeout);
    context_->transport().setTimeout(timeout);
    for (int j = 0; j < nodes; ++j)
      if (j != node_rank)
        put_entry(addresses_, context_->transport().createPair(j)->address().bytes());
  } catch (const std::exception& e) {
    throw MeshError("cannot listen for the other processes' collectives on '" + host +
                    "': " + e.what() + "; give an address of this machine the others reach");
  }
}

GlooMesh::~GlooMesh() = default;

void GlooMesh::connect(const std::vector<std::string>& node_blobs) {
  if (static_cast<int>(node_blobs.size()) != nodes_)
    throw MeshError("connecting the processes: " + std::to_string(node_blobs.size()) +
                    " nodes' addresses for " + std::to_string(nodes_) + " nodes");
  peer_names_.assign(static_cast<size_t>(nodes_), std::string());
  std::vector<std::vector<char>> mine(static_cast<size_t>(nodes_));
  for (int j = 0; j < nodes_; ++j) {
    if (j == node_rank_) continue;
    const auto entries = entries_of(node_blobs[static_cast<size_t>(j)], nodes_ - 1);
    if (entries.empty())
      throw MeshError("connecting the processes: node " + std::to_string(j) +
                      " sent malformed addresses (a different build of renaissance?)");
    // Node j lists its pairs in node order, without itself.
    mine[static_cast<size_t>(j)] =
        entries[static_cast<size_t>(node_rank_ < j ? node_rank_ : node_rank_ - 1)];
    peer_names_[static_cast<size_t>(j)] =
        gloo::transport::tcp::Address(mine[static_cast<size_t>(j)]).str();
  }
  try {
    for (int j = 0; j < nodes_; ++j)
      if (j != node_rank_) context_->transport().getPair(j)->connect(mine[static_cast<size_t>(j)]);
  } catch (const std::exception& e) {
    failed("connecting", e);
  }
}

void GlooMesh::all_gather(const void* data, size_t bytes, void* out, int channel) {
  exchange("an all-gather", data, bytes, 0, out, channel);
}

void GlooMesh::all_to_all(const void* data, size_t bytes, void* out, int channel) {
  exchange("an all-to-all", data, bytes, bytes, out, channel);
}

void GlooMesh::exchange(const char* what, const void* data, size_t bytes, size_t step, void* out,
                        int channel) {
  if (bytes == 0) return;  // every node has nothing, or the callers disagree on more
  auto* to = static_cast<char*>(out);
  const auto* from = static_cast<const char*>(data);
  const auto me = static_cast<size_t>(node_rank_);
  std::memmove(to + me * bytes, from + me * step, bytes);
  if (nodes_ == 1) return;
  const size_t total = bytes * static_cast<size_t>(nodes_);
  std::vector<bool> received(static_cast<size_t>(nodes_), false);
  received[me] = true;
  auto late = [&] {
    std::vector<int> out_of_time;
    for (int j = 0; j < nodes_; ++j)
      if (!received[static_cast<size_t>(j)]) out_of_time.push_back(j);
    return out_of_time;
  };
  try {
    // The same slot on every node for this channel's calls, which run in
    // the same order everywhere; no Gloo algorithm shares the pairs.
    const uint64_t slot = gloo::Slot::build(0x7e, static_cast<uint32_t>(channel));
    auto in = context_->createUnboundBuffer(const_cast<char*>(from), step ? total : bytes);
    auto back = context_->createUnboundBuffer(to, total);
    for (int j = 0; j < nodes_; ++j) {
      if (j == node_rank_) continue;
      const auto u = static_cast<size_t>(j);
      back->recv(j, slot, u * bytes, bytes);
      in->send(j, slot, u * step, bytes);
    }
    // One deadline for the whole exchange; never a negative wait, which
    // Gloo would read as "its default".
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto left = [&] {
      return std::max(std::chrono::milliseconds(1),
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now()));
    };
    for (int k = 1; k < nodes_; ++k) {
      int from_node = -1;
      back->waitRecv(&from_node, left());
      if (from_node >= 0 && from_node < nodes_) received[static_cast<size_t>(from_node)] = true;
    }
    for (int k = 1; k < nodes_; ++k) in->waitSend(left());
  } catch (const std::exception& e) {
    failed(what, e, late());
  }
}

void GlooMesh::failed(const char* what, const std::exception& e,
                      const std::vector<int>& late) const {
  const std::string why = e.what();
  // Gloo names the pair's far end: the address a node listens on, or the
  // port a node connected from, which tells only with two nodes.
  int node = nodes_ == 2 ? 1 - node_rank_ : -1;
  for (int j = 0; j < static_cast<int>(peer_names_.size()); ++j) {
    const std::string& name = peer_names_[static_cast<size_t>(j)];
    if (!name.empty() && why.find(name) != std::string::npos) node = j;
  }
  std::string who;
  if (node >= 0) {
    who = "node " + std::to_string(node) + " is gone or stopped answering; ";
  } else if (!late.empty()) {
    std::string list;
    for (const int j : late) list += (list.empty() ? "" : ", ") + std::to_string(j);
    who = (late.size() == 1 ? "node " + list + " sent nothing: it is gone or stopped answering; "
                            : "nodes " + list +
                                  " sent nothing: they are gone or stopped "
                                  "answering; ");
  }
  throw MeshError(std::string(what) + " between the " + std::to_string(nodes_) +
                  " processes failed on node " + std::to_string(node_rank_) + ": " + who +
                  "waited up to " + seconds(timeout_) + " (" + why + ")");
}

}  // namespace tr::net

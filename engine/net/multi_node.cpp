// SPDX-License-Identifier: GPL-3.0-or-later
#include "net/multi_node.h"

#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "compile/plan_report.h"
#include "net/gloo_mesh.h"
#include "net/tcp_rendezvous.h"

namespace tr {

void check_multi_node(const MultiNodeOptions& n) {
  if (n.nodes < 1)
    throw UsageError("the node count must be at least 1, not " + std::to_string(n.nodes));
  if (!n.across_nodes()) return;
  if (n.node_rank < 0 || n.node_rank >= n.nodes)
    throw UsageError("node rank " + std::to_string(n.node_rank) + " is outside 0.." +
                     std::to_string(n.nodes - 1) + " for " + std::to_string(n.nodes) + " nodes");
  if (n.rendezvous.empty())
    throw UsageError("training on " + std::to_string(n.nodes) +
                     " nodes needs node 0's address: --rendezvous HOST:PORT");
  (void)net::parse_endpoint(n.rendezvous);
}

CompiledProject compile_for_nodes(const Project& project, const CompileOptions& options,
                                  const MultiNodeOptions& nodes) {
  if (!nodes.across_nodes()) return compile_project(project, options);
  // The compiler splits the global batch over the device list, so it sees
  // the devices of every node; the result runs this node's.
  const std::vector<int>& mine = project.training.devices.ids;
  const int64_t world = static_cast<int64_t>(mine.size()) * nodes.nodes;
  if (world > 0 && project.training.global_batch % world != 0)
    throw UsageError("global_batch " + std::to_string(project.training.global_batch) +
                     " must be divisible by the " + std::to_string(world) + " ranks of " +
                     std::to_string(nodes.nodes) + " nodes x " + project.training.devices.str() +
                     " (--batch sets it)");
  if (project.training.tensor_ranks > 1)
    throw UsageError("mesh tensor=" + std::to_string(project.training.tensor_ranks) +
                     " sums every transformer block's features over its tensor ranks twice a "
                     "step each way, which belongs on the devices of one node: across " +
                     std::to_string(nodes.nodes) +
                     " nodes train with mesh tensor=1 (--mesh tensor=1)");
  if (project.training.sharding != Sharding::None)
    throw UsageError(
        "training.sharding \"" + std::string(sharding_name(project.training.sharding)) +
        "\" keeps each rank's share of the optimizer state in its own memory, and a checkpoint "
        "gathers the shares in one process: across " +
        std::to_string(nodes.nodes) +
        " nodes train with sharding \"none\" (--sharding none), or shard on the devices of one "
        "node");
  Project all = project;
  all.training.devices.ids.clear();
  for (int n = 0; n < nodes.nodes; ++n)
    all.training.devices.ids.insert(all.training.devices.ids.end(), mine.begin(), mine.end());
  CompiledProject cp = compile_project(all, options);
  cp.project.training.devices = project.training.devices;
  cp.design.training.devices = project.training.devices;
  return cp;
}

std::string plan_fingerprint(const CompiledProject& cp) {
  nlohmann::json plan = plan_report_json(cp);
  plan.erase("devices");
  Project p = cp.project;
  const int count = p.training.devices.world_size();
  p.training.devices.ids.clear();
  for (int i = 0; i < count; ++i) p.training.devices.ids.push_back(i);
  const std::string text = std::string(TR_VERSION) + "\n" + project_to_json(p) + "\n" + plan.dump();
  // FNV-1a: a check that nodes agree, not a defence against anyone.
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string node_fingerprint(const CompiledProject& cp, const MultiNodeOptions& nodes) {
  const std::string plan = plan_fingerprint(cp);
  return nodes.starting_point.empty() ? plan : plan + " " + nodes.starting_point;
}

std::shared_ptr<ProcessGroup> connect_cpu_processes(const MultiNodeOptions& nodes, int local_ranks,
                                                    const std::string& fingerprint) {
  const net::Endpoint node0 = net::parse_endpoint(nodes.rendezvous);
  auto mesh = std::make_shared<net::GlooMesh>(nodes.nodes, nodes.node_rank,
                                              net::local_address_towards(node0), nodes.timeout);
  net::RendezvousOptions o;
  o.address = nodes.rendezvous;
  o.nodes = nodes.nodes;
  o.node_rank = nodes.node_rank;
  o.local_ranks = local_ranks;
  o.fingerprint = fingerprint;
  o.node_blob = mesh->addresses();
  o.timeout = nodes.timeout;
  mesh->connect(net::rendezvous(o).node_blobs);
  return mesh;
}

void check_rendezvous_address(const std::string& address, const std::string& option) {
  (void)net::parse_endpoint(address, option);
}

}  // namespace tr

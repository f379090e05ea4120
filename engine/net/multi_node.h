// SPDX-License-Identifier: GPL-3.0-or-later
// Training across machines, as the setup sees it: the node options a front
// end passes (how many nodes, which one this is, where node 0's rendezvous
// listens), the plan compiled for the ranks of every node, and a fingerprint
// of that plan that every node must share. The CUDA backend does the
// rendezvous and creates the communicators (docs/multi-node.md).
#pragma once

#include <memory>
#include <string>

#include <renaissance/multi_node_options.h>
#include <renaissance/project.h>

#include "compile/compiler.h"
#include "core/process_group.h"

namespace tr {

// The project compiled for every node's ranks (one machine's, as the
// compiler compiles it): nodes x this node's devices share the global batch. The compiled project
// keeps this node's device list; its world_size is the global one.
CompiledProject compile_for_nodes(const Project& project, const CompileOptions& options,
                                  const MultiNodeOptions& nodes);

// 16 hex digits over the compiled plan and the project (not the device ids,
// which may differ between machines) and the engine version: nodes that
// would train different things do not match.
std::string plan_fingerprint(const CompiledProject& cp);
// What the nodes check at the rendezvous: the plan's fingerprint and, when
// training does not start from fresh weights, where it starts.
std::string node_fingerprint(const CompiledProject& cp, const MultiNodeOptions& nodes);

// CPU ranks across processes: this node's Gloo mesh (net/gloo_mesh.h),
// listening on the address by which this machine reaches node 0, its
// addresses published through the rendezvous (with `fingerprint`, which
// every node must share), connected to every other node.
std::shared_ptr<ProcessGroup> connect_cpu_processes(const MultiNodeOptions& nodes, int local_ranks,
                                                    const std::string& fingerprint);

}  // namespace tr

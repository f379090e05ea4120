// SPDX-License-Identifier: GPL-3.0-or-later
// Runs started by the launchers users already have, each launched process
// one node of the run: torchrun's environment (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT) or Slurm's srun (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST, SLURM_LAUNCH_NODE_IPADDR,
// SLURM_JOB_ID), read into the options --nodes, --node-rank and
// --rendezvous give by hand.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <renaissance/multi_node_options.h>

namespace tr::cli {

// An environment variable's value, or nothing when it is not set.
using Environment = std::function<std::optional<std::string>(const char* name)>;
Environment process_environment();

struct LaunchedNodes {
  MultiNodeOptions nodes;
  std::string how;  // "torchrun's RANK 1 of WORLD_SIZE 2, rendezvous 10.0.0.1:29500"
};

// `launcher`: "env" (torchrun's variables), "slurm" (srun's), "none", or
// "auto": torchrun's or Slurm's when they say there are several processes.
// Nothing for one process. Throws UsageError naming a variable that is
// missing or malformed, and the launcher that should have set it.
std::optional<LaunchedNodes> launched_nodes(const std::string& launcher, const Environment& env);

// The first host of a Slurm host list: "node[07-09,12],gpu1" -> "node07".
std::string first_slurm_host(const std::string& list);

}  // namespace tr::cli

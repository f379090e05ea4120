// SPDX-License-Identifier: GPL-3.0-or-later
#include "launcher.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include <renaissance/error.h>

namespace tr::cli {

namespace {

// A whole number from `name`'s value, at least `least`.
long long number(const Environment& env, const char* name, const char* launcher, long long least) {
  const std::optional<std::string> v = env(name);
  if (!v)
    throw UsageError(std::string("launched by ") + launcher + ", but " + name +
                     " is not set; start the run with " + launcher +
                     ", or give --nodes, --node-rank and --rendezvous (or --launcher none)");
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || n < least)
    throw UsageError(std::string(name) + "='" + *v + "' (set by " + launcher +
                     ") should be a whole number of at least " + std::to_string(least));
  return n;
}

// This process's rank `rank_var` and the process count `count_var`,
// checked against each other.
std::pair<long long, long long> rank_and_count(const Environment& env, const char* rank_var,
                                               const char* count_var, const char* launcher) {
  const long long count = number(env, count_var, launcher, 1);
  const long long rank = number(env, rank_var, launcher, 0);
  if (rank >= count)
    throw UsageError(std::string(rank_var) + "=" + std::to_string(rank) + " is not below " +
                     count_var + "=" + std::to_string(count) + " (" + launcher + ")");
  return {rank, count};
}

// Node `rank` of `count`, node 0 at `host`:`port`; `how` says who said so.
LaunchedNodes node_of(long long rank, long long count, const std::string& host, long long port,
                      const std::string& how) {
  LaunchedNodes l;
  l.nodes.nodes = static_cast<int>(count);
  l.nodes.node_rank = static_cast<int>(rank);
  const bool v6 = host.find(':') != std::string::npos;
  l.nodes.rendezvous = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  l.how = how + ", rendezvous " + l.nodes.rendezvous;
  return l;
}

std::optional<LaunchedNodes> torchrun(const Environment& env) {
  const char* who = "torchrun's conventions";
  const auto [rank, world] = rank_and_count(env, "RANK", "WORLD_SIZE", who);
  if (world == 1) return std::nullopt;
  const std::optional<std::string> host = env("MASTER_ADDR");
  if (!host || host->empty())
    throw UsageError(
        "launched by torchrun's conventions, but MASTER_ADDR is not set: the "
        "address of the process with RANK 0");
  return node_of(
      rank, world, *host, number(env, "MASTER_PORT", who, 1),
      "torchrun's RANK " + std::to_string(rank) + " of WORLD_SIZE " + std::to_string(world));
}

std::optional<LaunchedNodes> slurm(const Environment& env) {
  const char* who = "Slurm (srun)";
  const auto [rank, tasks] = rank_and_count(env, "SLURM_PROCID", "SLURM_NTASKS", who);
  if (tasks == 1) return std::nullopt;
  // Task 0 runs on the allocation's first node (srun's block distribution);
  // an exported MASTER_ADDR wins, as in PyTorch's Slurm recipes.
  std::string host;
  if (auto m = env("MASTER_ADDR"); m && !m->empty()) {
    host = *m;
  } else if (auto list = env("SLURM_JOB_NODELIST"); list && !list->empty()) {
    host = first_slurm_host(*list);
  } else if (auto list2 = env("SLURM_NODELIST"); list2 && !list2->empty()) {
    host = first_slurm_host(*list2);
  } else if (auto ip = env("SLURM_LAUNCH_NODE_IPADDR"); ip && !ip->empty()) {
    host = *ip;
  }
  if (host.empty())
    throw UsageError(
        "launched by Slurm, but none of MASTER_ADDR, SLURM_JOB_NODELIST, "
        "SLURM_NODELIST and SLURM_LAUNCH_NODE_IPADDR is set: where task 0 runs");
  // Every task of a job agrees on the port: MASTER_PORT, else one from the job id.
  long long port = 29500;
  if (env("MASTER_PORT"))
    port = number(env, "MASTER_PORT", who, 1);
  else if (env("SLURM_JOB_ID"))
    port = 29500 + number(env, "SLURM_JOB_ID", who, 0) % 1000;
  return node_of(
      rank, tasks, host, port,
      "Slurm's SLURM_PROCID " + std::to_string(rank) + " of SLURM_NTASKS " + std::to_string(tasks));
}

}  // namespace

Environment process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

std::optional<LaunchedNodes> launched_nodes(const std::string& launcher, const Environment& env) {
  if (launcher == "none") return std::nullopt;
  if (launcher == "env") return torchrun(env);
  if (launcher == "slurm") return slurm(env);
  if (launcher != "auto")
    throw UsageError(
        "option '--launcher' takes env (torchrun's RANK, WORLD_SIZE, MASTER_ADDR, "
        "MASTER_PORT), slurm (srun's SLURM_PROCID, SLURM_NTASKS, ...), auto (either, "
        "when set) or none, got '" +
        launcher + "'");
  if (env("WORLD_SIZE") && env("RANK")) return torchrun(env);
  if (env("SLURM_NTASKS") && env("SLURM_PROCID")) return slurm(env);
  return std::nullopt;
}

std::string first_slurm_host(const std::string& list) {
  // The first entry: up to a comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : list) {
    if (c == ',' && depth == 0) break;
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    first.push_back(c);
  }
  const size_t open = first.find('[');
  if (open == std::string::npos) return first;
  // "prefix[07-09,12]suffix": the first number of the range, its digits kept.
  const size_t close = first.find(']', open);
  std::string range =
      first.substr(open + 1, close == std::string::npos ? std::string::npos : close - open - 1);
  const size_t cut = range.find_first_of(",-");
  if (cut != std::string::npos) range.resize(cut);
  const std::string suffix = close == std::string::npos ? std::string() : first.substr(close + 1);
  return first.substr(0, open) + range + suffix;
}

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
#include "training_setup.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "compile_choice.h"
#include "launcher.h"
#include "project_overrides.h"

namespace tr::cli {

std::set<std::string> setup_options() {
  std::set<std::string> s = override_options();
  s.insert("data");
  s.insert("threads");
  s.insert(kRewritesOption);
  s.insert(kPackingOption);
  s.insert(kValidationMicroBatchOption);
  s.insert(kRecomputeOption);
  s.insert(kMemoryBudgetOption);
  s.insert("conv-algorithms");
  return s;
}

std::set<std::string> cuda_measure_options() {
  return {"streams", "capture"};
}

std::set<std::string> node_options() {
  return {"nodes", "node-rank", "rendezvous", "rendezvous-timeout", "launcher"};
}

namespace {

std::chrono::milliseconds rendezvous_timeout(const ParsedArgs& a,
                                             std::chrono::milliseconds otherwise) {
  if (!a.values.count("rendezvous-timeout")) return otherwise;
  const long long s = positive_integer("rendezvous-timeout", a.values.at("rendezvous-timeout"));
  if (s > 7 * 24 * 3600)
    throw UsageError("option '--rendezvous-timeout' takes seconds, at most a week (604800)");
  return std::chrono::seconds(s);
}

}  // namespace

MultiNodeOptions read_node_options(const ParsedArgs& a, bool launchers) {
  MultiNodeOptions n;
  const auto chosen = a.values.find("launcher");
  const std::string launcher = chosen == a.values.end() ? "auto" : chosen->second;
  if (a.values.count("nodes") && launcher != "auto" && launcher != "none")
    throw UsageError("option '--launcher " + launcher +
                     "' takes the nodes from the launcher's environment; leave out --nodes, "
                     "--node-rank and --rendezvous");
  if (!a.values.count("nodes") && launchers) {
    if (const auto l = launched_nodes(launcher, process_environment())) {
      for (const char* o : {"node-rank", "rendezvous"})
        if (a.values.count(o))
          throw UsageError(std::string("option '--") + o + "' is given by the launcher (" + l->how +
                           "); leave it out, or give --launcher none");
      std::printf("launched as one node of several: %s\n", l->how.c_str());
      n = l->nodes;
      n.timeout = rendezvous_timeout(a, n.timeout);
      return n;
    }
  }
  if (!a.values.count("nodes")) {
    for (const char* o : {"node-rank", "rendezvous", "rendezvous-timeout"})
      if (a.values.count(o))
        throw UsageError(std::string("option '--") + o +
                         "' is for training across machines: give --nodes N as well");
    return n;
  }
  const long long nodes = positive_integer("nodes", a.values.at("nodes"));
  if (nodes > 4096) throw UsageError("option '--nodes' takes at most 4096 machines");
  n.nodes = static_cast<int>(nodes);
  if (n.nodes == 1) return n;
  if (!a.values.count("node-rank"))
    throw UsageError("training on " + std::to_string(n.nodes) +
                     " nodes needs --node-rank R (0 on the machine whose address --rendezvous "
                     "gives, 1.." +
                     std::to_string(n.nodes - 1) + " on the others)");
  const std::string& rank = a.values.at("node-rank");
  errno = 0;
  char* end = nullptr;
  const long long r = std::strtoll(rank.c_str(), &end, 10);
  if (rank.empty() || *end != '\0' || errno == ERANGE || r < 0 || r >= n.nodes)
    throw UsageError("option '--node-rank' takes a whole number from 0 to " +
                     std::to_string(n.nodes - 1) + " (--nodes " + std::to_string(n.nodes) +
                     "), got '" + rank + "'");
  n.node_rank = static_cast<int>(r);
  if (!a.values.count("rendezvous"))
    throw UsageError("training on " + std::to_string(n.nodes) +
                     " nodes needs --rendezvous HOST:PORT: node 0's address and a free port, "
                     "the same on every node");
  n.rendezvous = a.values.at("rendezvous");
  check_rendezvous_address(n.rendezvous);
  n.timeout = rendezvous_timeout(a, n.timeout);
  return n;
}

namespace {

// A two-choice option: true for `first`, false for `second`, nothing when
// it is absent; any other value is a UsageError naming both and what they mean.
std::optional<bool> two_way(const ParsedArgs& a, const char* name, const char* first,
                            const char* first_means, const char* second, const char* second_means) {
  const auto it = a.values.find(name);
  if (it == a.values.end()) return std::nullopt;
  if (it->second == first) return true;
  if (it->second == second) return false;
  throw UsageError(std::string("option '--") + name + "' takes " + first + " (" + first_means +
                   ") or " + second + " (" + second_means + "), got '" + it->second + "'");
}

}  // namespace

TrainingJob prepare_training(const std::string& project_path, const ParsedArgs& a,
                             bool allow_cpu_fallback, std::optional<MultiNodeOptions> nodes) {
  return prepare_training(load_project(project_path), a, allow_cpu_fallback, std::move(nodes));
}

TrainingJob prepare_training(Project project, const ParsedArgs& a, bool allow_cpu_fallback,
                             std::optional<MultiNodeOptions> nodes) {
  SetupOptions options;
  options.allow_cpu_fallback = allow_cpu_fallback;
  options.nodes = nodes ? std::move(*nodes) : read_node_options(a, false);
  apply_overrides(a, project, options.nodes.nodes);
  if (a.values.count("threads"))
    options.cpu_threads = static_cast<int>(positive_integer("threads", a.values.at("threads")));
  if (a.values.count("data")) options.data_dir = a.values.at("data");
  if (const auto five =
          two_way(a, "streams", "5", "a CUDA stream per StreamKind", "1", "all work on one stream"))
    options.cuda_streams = *five ? 5 : 1;
  if (const auto on =
          two_way(a, "capture", "on", "CUDA graphs", "off", "the same launches one by one"))
    options.cuda_capture = *on;
  if (const auto fastest =
          two_way(a, "conv-algorithms", "fastest", "cuDNN's fastest measured algorithm",
                  "deterministic", "the fastest whose results repeat bit for bit"))
    options.cuda_deterministic_conv = !*fastest;
  options.compile = compile_options_from(a, project);
  return TrainingJob(std::move(project), options);
}

void read_checkpoint_options(const ParsedArgs& a, TrainOptions& options) {
  if (a.values.count("checkpoint-dir")) {
    options.checkpoint_dir = a.values.at("checkpoint-dir");
    if (options.checkpoint_dir.empty())
      throw UsageError("option '--checkpoint-dir' needs a folder name");
  }
  if (a.values.count("resume")) {
    const std::string& path = a.values.at("resume");
    auto c = std::make_shared<Checkpoint>(read_checkpoint(path));
    std::printf("resuming from %s: epoch %lld, batch %lld, step %lld (saved on %d rank%s)\n",
                path.c_str(), static_cast<long long>(c->position.epoch + 1),
                static_cast<long long>(c->position.batch + 1),
                static_cast<long long>(c->position.step), c->world_size,
                c->world_size == 1 ? "" : "s");
    options.resume = std::move(c);
    options.resume_source = path;
  }
  if (a.values.count("init-from")) {
    const std::string& path = a.values.at("init-from");
    options.init_from = std::make_shared<Checkpoint>(read_checkpoint(path));
    options.init_from_source = path;
  }
  options.eval_ema = a.has("eval-ema");
}

}  // namespace tr::cli

// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/training_setup.h"

#include <cstdio>

#include "cli/compile_choice.h"
#include "cli/project_overrides.h"
#include "core/error.h"
#include "model/project_io.h"
#include "runtime/checkpoint.h"

namespace tr::cli {

std::set<std::string> setup_options() {
  std::set<std::string> s = override_options();
  s.insert("data");
  s.insert("threads");
  s.insert(kRewritesOption);
  return s;
}

TrainingSetup prepare_training(const std::string& project_path, const ParsedArgs& a) {
  Project project = load_project(project_path);
  apply_overrides(a, project);
  SetupOptions options;
  if (a.values.count("threads"))
    options.cpu_threads = static_cast<int>(positive_integer("threads", a.values.at("threads")));
  if (a.values.count("data")) options.data_dir = a.values.at("data");
  options.compile = compile_options_from(a);
  return tr::prepare_training(std::move(project), options);
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
  options.eval_ema = a.has("eval-ema");
}

}  // namespace tr::cli

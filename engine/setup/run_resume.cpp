// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_resume.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>

namespace tr::store {

namespace {

std::string folder_of(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return folder.empty() ? "." : folder;
}

}  // namespace

RunResume describe_run_resume(const RunStore& store, int64_t run) {
  RunResume r;
  r.run = store.run(run);
  check_resumable(r.run);
  const std::vector<CheckpointRecord> checkpoints = store.checkpoints(run);
  if (checkpoints.empty())
    throw StoreError("run " + std::to_string(run) + " (" +
                     std::string(run_status_name(r.run.summary.status)) +
                     ") recorded no checkpoint, so there is nothing to continue from; it was "
                     "trained without --checkpoint-dir, or ended before its first epoch");
  r.checkpoint_dir = folder_of(checkpoints.back().path);
  const nlohmann::json hyper = nlohmann::json::parse(r.run.hyper_json, nullptr, false);
  if (hyper.is_object()) {
    const auto epochs = hyper.find("epochs");
    if (epochs != hyper.end() && epochs->is_number_integer() && epochs->get<int64_t>() > 0)
      r.epochs = epochs->get<int64_t>();
    const auto steps = hyper.find("max_steps");
    if (steps != hyper.end() && steps->is_number_integer() && steps->get<int64_t>() > 0)
      r.max_steps = steps->get<int64_t>();
    const auto validate = hyper.find("validation");
    if (validate != hyper.end() && validate->is_boolean()) r.validate = validate->get<bool>();
    const auto ema = hyper.find("eval_ema");
    if (ema != hyper.end() && ema->is_boolean()) r.eval_ema = ema->get<bool>();
  }
  return r;
}

RunResume find_run_resume(const RunStore& store, int64_t run) {
  RunResume r = describe_run_resume(store, run);
  const std::vector<CheckpointRecord> checkpoints = store.checkpoints(run);
  // The latest first: a killed run's newest file is what it got to.
  for (auto c = checkpoints.rbegin(); c != checkpoints.rend(); ++c) {
    std::error_code ec;
    if (!std::filesystem::exists(c->path, ec)) {
      r.unusable.push_back("checkpoint '" + c->path + "' is gone");
      continue;
    }
    try {
      r.checkpoint = std::make_shared<Checkpoint>(read_checkpoint(c->path));
      r.checkpoint_path = c->path;
      break;
    } catch (const UsageError& e) {
      r.unusable.push_back(e.what());
    }
  }
  if (!r.checkpoint) {
    std::string why;
    for (const std::string& u : r.unusable) why += "\n  " + u;
    throw StoreError("run " + std::to_string(run) + " cannot be resumed: none of its " +
                     std::to_string(checkpoints.size()) + " checkpoint" +
                     (checkpoints.size() == 1 ? "" : "s") + " can be read:" + why);
  }
  r.checkpoint_dir = folder_of(r.checkpoint_path);
  return r;
}

void apply_run_resume(const RunResume& resume, TrainOptions& options) {
  options.resume = resume.checkpoint;
  options.resume_source = resume.checkpoint_path;
  if (options.checkpoint_dir.empty()) options.checkpoint_dir = resume.checkpoint_dir;
  if (options.epochs <= 0) options.epochs = resume.epochs;
  if (options.max_steps < 0) options.max_steps = resume.max_steps;
  options.validate = options.validate && resume.validate;
  options.eval_ema = options.eval_ema || resume.eval_ema;
}

}  // namespace tr::store

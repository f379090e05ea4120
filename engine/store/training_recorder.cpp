// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/training_recorder.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>

namespace tr::store {

namespace {

// N from a path ending in "-<word>N.ckpt", as the trainer names checkpoints.
std::optional<int64_t> checkpoint_number(const std::string& path, std::string_view word) {
  constexpr std::string_view kSuffix = ".ckpt";
  const std::string_view p = path;
  if (!p.ends_with(kSuffix)) return std::nullopt;
  const size_t end = p.size() - kSuffix.size();
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(p[begin - 1]))) --begin;
  if (begin == end || end - begin > 18) return std::nullopt;
  const std::string marker = "-" + std::string(word);
  if (!p.substr(0, begin).ends_with(marker)) return std::nullopt;
  return std::strtoll(path.c_str() + begin, nullptr, 10);
}

}  // namespace

RunStart run_start_of(const CompiledPlan& plan, const TrainingContext& context,
                      const TrainOptions& options) {
  const Project& project = plan.project();
  const TrainingSpec& t = project.training;
  RunStart start;
  start.name = project.name;
  start.project_json = project_to_json(project);
  nlohmann::json hyper = nlohmann::json::parse(start.project_json).at("training");
  hyper["max_steps"] = options.max_steps >= 0 ? nlohmann::json(options.max_steps) : nullptr;
  hyper["validation"] = options.validate;
  hyper["eval_ema"] = options.eval_ema;
  if (!options.resume_source.empty()) hyper["resumed_from"] = options.resume_source;
  hyper["cpu_threads"] = context.cpu_threads;
  hyper["dataset"] = context.dataset;
  start.hyper_json = hyper.dump();
  start.devices = t.devices.str();
  start.world_size = plan.world_size();
  start.precision = std::string(precision_name(t.precision));
  start.seed = t.seed;
  return start;
}

TrainingRecorder::TrainingRecorder(const std::string& store_path, const CompiledPlan& plan,
                                   const TrainingContext& context, const TrainOptions& options,
                                   RecorderOptions recorder_options)
    : recorder_(store_path, run_start_of(plan, context, options), recorder_options) {
  const int64_t global = plan.project().training.global_batch;
  const int64_t world = plan.world_size();
  batch_images_ = static_cast<double>(global);
  // The last batch holds the remainder, cut to a multiple of the world size.
  last_images_ = static_cast<double>(context.train_samples % global / world * world);
}

void TrainingRecorder::attach(TrainCallbacks& cb) {
  cb.on_step = [this, before = cb.on_step](const StepReport& s) {
    if (before) before(s);
    StepRecord r;
    r.step = s.step;
    r.epoch = s.epoch;
    r.loss = s.loss;
    r.top1 = s.top1;
    r.lr = s.lr;
    if (s.loss_scale > 0) r.loss_scale = s.loss_scale;  // NULL without AMP
    const double images = s.partial ? last_images_ : batch_images_;
    r.images_per_s = s.seconds > 0 ? images / s.seconds : 0;
    recorder_.push_step(r);
  };
  cb.on_epoch = [this, before = cb.on_epoch](const EpochReport& e) {
    if (before) before(e);
    EpochRecord r;
    r.epoch = e.epoch;
    r.train_loss = e.train_loss;
    r.train_top1 = e.train_top1;
    if (e.validated) {
      r.val_loss = e.val_loss;
      r.val_top1 = e.val_top1;
      r.val_top5 = e.val_top5;
    }
    r.images_per_s = e.images_per_s;
    r.seconds = e.seconds;
    r.confusion = e.confusion;
    recorder_.push_epoch(std::move(r));
  };
}

std::string TrainingRecorder::ended(const TrainReport& report) {
  // The trainer names checkpoints <project>-epoch<E>.ckpt (E epochs done)
  // and <project>-step<S>.ckpt (stopped before step S).
  for (const std::string& path : report.checkpoints) {
    CheckpointRecord c;
    c.path = path;
    c.epoch = checkpoint_number(path, "epoch");
    c.step = checkpoint_number(path, "step");
    if (c.epoch) {
      for (const EpochReport& e : report.epochs) {
        if (e.epoch + 1 != *c.epoch) continue;
        nlohmann::json j = {{"train_loss", e.train_loss}, {"train_top1", e.train_top1}};
        if (e.validated) {
          j["val_loss"] = e.val_loss;
          j["val_top1"] = e.val_top1;
          j["val_top5"] = e.val_top5;
        }
        c.metrics_json = j.dump();
      }
    }
    recorder_.push_checkpoint(std::move(c));
  }
  return recorder_.finish(report.stopped ? RunStatus::Stopped : RunStatus::Finished);
}

std::string TrainingRecorder::failed(const std::string& error) {
  return recorder_.finish(RunStatus::Failed, error);
}

}  // namespace tr::store

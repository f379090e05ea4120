// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/training_recorder.h>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/store_location.h>
#include "data/epoch_plan.h"

namespace tr::store {

RunStart run_start_of(const CompiledPlan& plan, const TrainingContext& context,
                      const TrainOptions& options) {
  const Project& project = plan.design();
  const TrainingSpec& t = project.training;
  RunStart start;
  start.name = project.name;
  start.project_json = project_to_json(project);
  nlohmann::json hyper = nlohmann::json::parse(start.project_json).at("training");
  // A front end's epoch count (the workbench's) over the project's.
  if (options.epochs > 0) hyper["epochs"] = options.epochs;
  hyper["max_steps"] = options.max_steps >= 0 ? nlohmann::json(options.max_steps) : nullptr;
  hyper["validation"] = options.validate;
  hyper["eval_ema"] = options.eval_ema;
  if (!options.resume_source.empty()) hyper["resumed_from"] = options.resume_source;
  if (!options.init_from_source.empty()) hyper["init_from"] = options.init_from_source;
  hyper["cpu_threads"] = context.cpu_threads;
  // Which build of the CPU kernels ran: runs from machines with other
  // instructions compare by it.
  if (!context.cpu_kernels.empty()) hyper["cpu_kernels"] = context.cpu_kernels;
  hyper["dataset"] = context.dataset;
  // What a follower needs for the run's length before its first epoch ends.
  if (context.train_samples > 0)
    hyper["batches_per_epoch"] =
        EpochPlan(context.train_samples, t.global_batch, plan.world_size(), 0, false, false, 0, 0)
            .batches();
  start.hyper_json = hyper.dump();
  // Across processes the devices are each node's: "2 nodes x cpu:1".
  const int local = t.devices.world_size();
  start.devices = plan.world_size() > local
                      ? std::to_string(plan.world_size() / local) + " nodes x " + t.devices.str()
                      : t.devices.str();
  start.world_size = plan.world_size();
  start.precision = std::string(precision_name(t.precision));
  start.seed = t.seed;
  return start;
}

TrainingRecorder::TrainingRecorder(const std::string& store_path, const CompiledPlan& plan,
                                   const TrainingContext& context, const TrainOptions& options,
                                   RecorderOptions recorder_options)
    : recorder_(store_path, run_start_of(plan, context, options), recorder_options) {
  count_images(plan, context);
}

TrainingRecorder::TrainingRecorder(const std::string& store_path, int64_t run,
                                   const CompiledPlan& plan, const TrainingContext& context,
                                   const TrainOptions& options, RecorderOptions recorder_options)
    : recorder_(store_path, run, resume_start_of(options), recorder_options) {
  count_images(plan, context);
}

ResumeStart TrainingRecorder::resume_start_of(const TrainOptions& options) {
  if (!options.resume) throw std::logic_error("resuming a recorded run needs TrainOptions::resume");
  return {options.resume_source, options.resume->position.step, options.resume->position.epoch};
}

void TrainingRecorder::count_images(const CompiledPlan& plan, const TrainingContext& context) {
  const int64_t global = plan.project().training.global_batch;
  const int64_t world = plan.world_size();
  batch_images_ = static_cast<double>(global);
  // The last batch holds the remainder, cut to a multiple of the ranks.
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
    r.steps = e.steps;
    r.batches = e.batches;
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
  // Recorded as soon as the file is on disk: a run killed later still lists
  // it, and --resume-run finds it.
  cb.on_checkpoint = [this, before = cb.on_checkpoint](const CheckpointReport& k) {
    if (before) before(k);
    if (!k.error.empty()) return;
    CheckpointRecord c;
    c.path = k.path;
    if (k.position.batch == 0) c.epoch = k.position.epoch;  // epochs done
    c.step = k.position.step;
    if (k.epoch) {
      const EpochReport& e = *k.epoch;
      nlohmann::json j = {{"train_loss", e.train_loss}, {"train_top1", e.train_top1}};
      if (e.validated) {
        j["val_loss"] = e.val_loss;
        j["val_top1"] = e.val_top1;
        j["val_top5"] = e.val_top5;
      }
      c.metrics_json = j.dump();
    }
    recorder_.push_checkpoint(std::move(c));
  };
}

std::string TrainingRecorder::final_weights_path() const {
  return store::final_weights_path(store_path(), run_id());
}

std::string TrainingRecorder::ended(const TrainReport& report) {
  if (!report.final_weights.empty()) recorder_.set_final_weights(report.final_weights);
  return recorder_.finish(report.stopped ? RunStatus::Stopped : RunStatus::Finished);
}

std::string TrainingRecorder::failed(const std::string& error) {
  return recorder_.finish(RunStatus::Failed, error);
}

}  // namespace tr::store

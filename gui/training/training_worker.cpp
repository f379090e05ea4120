// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/training_worker.h"

#include <chrono>
#include <optional>
#include <utility>

#include <renaissance/checkpoint.h>
#include <renaissance/run_resume.h>
#include <renaissance/training_job.h>
#include <renaissance/training_recorder.h>
#include "training/failure_text.h"
#include "training/step_throttle.h"

namespace tr::gui {

namespace {

using Clock = std::chrono::steady_clock;

// Errors that are not std::exceptions still deserve a message, not a crash.
struct UnknownError : std::exception {
  const char* what() const noexcept override { return "an unknown error"; }
};

TrainOptions options_of(const TrainingRequest& r) {
  TrainOptions o;
  o.epochs = r.epochs;
  o.max_steps = r.max_steps;
  o.validate = r.validate;
  if (r.profile_begin >= 0 && r.profile_end > r.profile_begin) {
    o.profile_begin = r.profile_begin;
    o.profile_end = r.profile_end;
  }
  o.eval_ema = r.eval_ema;
  o.checkpoint_dir = r.checkpoint_dir.toStdString();
  return o;
}

QString description_of(const CompiledPlan& cp, const TrainingContext& context,
                       const std::string& device_note, int64_t epochs) {
  const TrainingSpec& t = cp.project().training;
  QString text = QStringLiteral("%1: %2 parameters, %3, global batch %4 on %5, %6 epoch%7")
                     .arg(QString::fromStdString(cp.project().name))
                     .arg(cp.analysis().total_params)
                     .arg(QString::fromStdString(context.dataset))
                     .arg(t.global_batch)
                     .arg(QString::fromStdString(t.devices.str()))
                     .arg(epochs)
                     .arg(epochs == 1 ? QString() : QStringLiteral("s"));
  if (!device_note.empty())
    text += QStringLiteral(" (%1)").arg(QString::fromStdString(device_note));
  return text;
}

}  // namespace

TrainingWorker::TrainingWorker(Project project, TrainingRequest request, std::string store_path,
                               std::shared_ptr<RunControl> control)
    : project_(std::move(project)),
      request_(std::move(request)),
      storePath_(std::move(store_path)),
      control_(std::move(control)) {}

void TrainingWorker::run() {
  TrainingOutcome outcome;
  try {
    outcome = runTraining();
  } catch (const std::exception& e) {
    // Only a failure of the GUI side itself gets here; the engine's are caught per stage.
    outcome.failed = true;
    outcome.error = failure_text(TrainingStage::Training, e);
  }
  emit ended(outcome);
}

TrainingOutcome TrainingWorker::runTraining() {
  TrainingOutcome out;
  const auto fail = [&out](TrainingStage stage, const std::exception& e) {
    out.failed = true;
    out.error = failure_text(stage, e);
    return out;
  };

  std::optional<TrainingJob> job;
  try {
    job.emplace(project_);
  } catch (const std::exception& e) {
    return fail(TrainingStage::Setup, e);
  } catch (...) {
    return fail(TrainingStage::Setup, UnknownError());
  }
  const auto cp = std::make_shared<const CompiledPlan>(job->plan());
  const TrainingContext& context = job->context();

  TrainOptions options = options_of(request_);
  try {
    if (request_.resume_run > 0) {
      const store::RunStore s(storePath_);
      store::apply_run_resume(store::find_run_resume(s, request_.resume_run), options);
    } else if (!request_.resume_path.isEmpty()) {
      options.resume_source = request_.resume_path.toStdString();
      options.resume = std::make_shared<const Checkpoint>(read_checkpoint(options.resume_source));
    } else {
      apply_project_init_from(project_, options);  // Start from weights
    }
    // Refused here, before the store records anything.
    job->check(options);
  } catch (const std::exception& e) {
    return fail(TrainingStage::Checkpoint, e);
  }
  if (control_->stopRequested()) {
    out.stopped = true;  // before anything was recorded: nothing to keep
    return out;
  }
  options.stop = control_->stopFlag();

  std::unique_ptr<store::TrainingRecorder> recorder;
  // From the recorder's own thread; the signal is queued to the GUI.
  store::RecorderOptions told;
  told.on_trouble = [this](const std::string& text) {
    emit storeTrouble(QString::fromStdString(text), false);
  };
  told.on_recovered = [this](const std::string& text) {
    emit storeTrouble(QString::fromStdString(text), true);
  };
  try {
    recorder =
        request_.resume_run > 0
            ? std::make_unique<store::TrainingRecorder>(storePath_, request_.resume_run, *cp,
                                                        context, options, told)
            : std::make_unique<store::TrainingRecorder>(storePath_, *cp, context, options, told);
  } catch (const std::exception& e) {
    return fail(TrainingStage::Store, e);
  }
  out.run_id = recorder->run_id();
  // Every run keeps the weights it ends with, so Try the Model, Export ONNX
  // and Start from weights find them without a checkpoint folder.
  options.final_weights = recorder->final_weights_path();
  const int64_t epochs = options.epochs > 0 ? options.epochs : cp->project().training.epochs;
  emit started(out.run_id, description_of(*cp, context, job->device_note(), epochs));

  // Images per step as the recorder counts them, so the view and the store agree.
  const int64_t global = cp->project().training.global_batch;
  const int64_t world = cp->world_size();
  const double batch_images = static_cast<double>(global);
  const double last_images = static_cast<double>(context.train_samples % global / world * world);

  // The callbacks run on the rank-0 training thread, one at a time.
  StepThrottle throttle;
  const auto t0 = Clock::now();
  double paused_seconds = 0;
  const auto flush = [&] {
    std::vector<StepSample> steps = throttle.take();
    if (!steps.empty()) emit stepsDone(steps);
  };
  TrainCallbacks callbacks;
  callbacks.on_step = [&](const StepReport& s) {
    StepSample x;
    x.step = s.step;
    x.epoch = s.epoch;
    x.batch = s.batch;
    x.batches = s.batches;
    x.loss = s.loss;
    x.top1 = s.top1;
    x.lr = s.lr;
    x.seconds = s.seconds;
    x.images_per_s = s.seconds > 0 ? (s.partial ? last_images : batch_images) / s.seconds : 0;
    x.elapsed = std::chrono::duration<double>(Clock::now() - t0).count() - paused_seconds;
    std::vector<StepSample> steps = throttle.add(x);
    if (!steps.empty()) emit stepsDone(steps);
  };
  callbacks.on_epoch = [&](const EpochReport& e) {
    flush();
    emit epochDone(e);
  };
  // The profiled steps reach the timeline as soon as they are done.
  bool profile_shown = false;
  callbacks.on_profile = [&](const std::vector<ProfileSpan>& spans) {
    profile_shown = true;
    emit profileReady(spans, cp);
  };
  recorder->attach(callbacks);
  // The gate comes after the recorder, so the step a run pauses at is already in the store.
  callbacks.on_step = [&, recorded = callbacks.on_step](const StepReport& s) {
    recorded(s);
    if (!control_->pauseRequested() || control_->stopRequested()) return;
    flush();
    emit pausedAt(s.step);
    paused_seconds += control_->waitWhilePaused();
  };

  TrainReport report;
  try {
    report = job->train(options, callbacks);
  } catch (const std::exception& e) {
    flush();
    out.record_warning = QString::fromStdString(recorder->failed(e.what()));
    return fail(TrainingStage::Training, e);
  } catch (...) {
    flush();
    out.record_warning = QString::fromStdString(recorder->failed(UnknownError().what()));
    return fail(TrainingStage::Training, UnknownError());
  }
  flush();
  out.record_warning = QString::fromStdString(recorder->ended(report));
  out.steps = report.steps;
  out.first_step = report.first_step;
  out.stopped = report.stopped;
  for (const std::string& path : report.checkpoints)
    out.checkpoints.push_back(QString::fromStdString(path));
  out.final_weights = QString::fromStdString(report.final_weights);
  out.final_weights_error = QString::fromStdString(report.final_weights_error);
  out.init_loaded = report.init_loaded;
  out.init_from = QString::fromStdString(options.init_from_source);
  // A run stopped inside its profiled steps still shows what it profiled.
  if (!profile_shown && !report.profile.empty()) emit profileReady(report.profile, cp);
  return out;
}

}  // namespace tr::gui

// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/run_follower.h"

#include <QTimer>
#include <exception>

#include <nlohmann/json.hpp>

#include <renaissance/project_io.h>
#include <renaissance/run_store.h>

namespace tr::gui {

namespace {

int64_t integer_or(const nlohmann::json& j, const char* key, int64_t otherwise) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : otherwise;
}

EpochReport epoch_report(const store::EpochRecord& r) {
  EpochReport e;
  e.epoch = r.epoch;
  e.steps = r.steps;
  e.batches = r.batches;
  e.train_loss = r.train_loss;
  e.train_top1 = r.train_top1;
  e.validated = r.val_loss.has_value();
  e.val_loss = r.val_loss.value_or(0);
  e.val_top1 = r.val_top1.value_or(0);
  e.val_top5 = r.val_top5.value_or(0);
  e.images_per_s = r.images_per_s;
  e.seconds = r.seconds;
  e.confusion = r.confusion;
  return e;
}

}  // namespace

RunFollower::RunFollower(QObject* parent) : QObject(parent), timer_(new QTimer(this)) {
  timer_->setInterval(kPollMs);
  connect(timer_, &QTimer::timeout, this, &RunFollower::poll);
}

bool RunFollower::active() const {
  return timer_->isActive();
}

void RunFollower::stop() {
  timer_->stop();
}

bool RunFollower::follow(const QString& storePath, qint64 id, QString* error) {
  Run run;
  run.id = id;
  int64_t batches = 0;
  double images = 0;
  try {
    // Opening marks a run whose writer died as interrupted.
    const store::RunStore s(storePath.toStdString());
    const store::RunDetail d = s.run(id);
    if (d.summary.status != store::RunStatus::Running) {
      if (error)
        *error = tr("Run %1 is not being recorded now (it %2); the Runs view shows its curves.")
                     .arg(id)
                     .arg(QString::fromStdString(std::string(run_status_name(d.summary.status))));
      return false;
    }
    run.name = QString::fromStdString(d.summary.name);
    run.writer = tr("pid %1 on %2").arg(d.writer_pid).arg(QString::fromStdString(d.writer_host));
    const Project p = parse_project(d.project_json, "run " + std::to_string(id) + "'s project");
    run.dataset = p.dataset;
    const nlohmann::json hyper = nlohmann::json::parse(d.hyper_json, nullptr, false);
    run.epochs = integer_or(hyper, "epochs", p.training.epochs);
    run.max_steps = integer_or(hyper, "max_steps", -1);
    batches = integer_or(hyper, "batches_per_epoch", 0);
    images = static_cast<double>(p.training.global_batch);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  path_ = storePath;
  run_ = run;
  batches_ = batches;
  batchImages_ = images;
  nextStep_ = nextEpoch_ = 0;
  firstStep_ = -1;
  elapsed_ = 0;
  timer_->start();
  // What is there already, as soon as the caller has shown the run.
  QTimer::singleShot(0, this, [this, id] {
    if (active() && run_.id == id) poll();
  });
  return true;
}

void RunFollower::poll() {
  try {
    const store::RunStore s(path_.toStdString());
    // The status first: steps recorded before it ended are read below.
    const store::RunDetail d = s.run(run_.id);
    std::vector<StepSample> samples;
    for (const store::StepRecord& r : s.step_curve(run_.id, nextStep_)) {
      StepSample x;
      x.step = r.step;
      x.epoch = r.epoch;
      x.batches = batches_;
      x.batch = batches_ > 0 ? r.step - r.epoch * batches_ : 0;
      x.loss = r.loss;
      x.top1 = r.top1;
      x.lr = r.lr;
      x.images_per_s = r.images_per_s;
      x.seconds = r.images_per_s > 0 ? batchImages_ / r.images_per_s : 0;
      elapsed_ += x.seconds;
      x.elapsed = elapsed_;
      if (firstStep_ < 0) firstStep_ = r.step;
      nextStep_ = r.step + 1;
      samples.push_back(x);
    }
    if (!samples.empty()) emit stepsRead(samples);
    for (const store::EpochRecord& r : s.epochs(run_.id)) {
      if (r.epoch < nextEpoch_) continue;
      // The epoch's step count, where the run was too old to record it.
      if (batches_ == 0 && !r.partial() && r.batches > 0) batches_ = r.batches;
      nextEpoch_ = r.epoch + 1;
      emit epochRead(epoch_report(r));
    }
    if (d.summary.status == store::RunStatus::Running) return;
    timer_->stop();
    TrainingOutcome o;
    o.run_id = run_.id;
    o.steps = d.summary.steps;
    o.first_step = firstStep_ < 0 ? 0 : firstStep_;
    o.stopped = d.summary.status == store::RunStatus::Stopped;
    o.failed = d.summary.status == store::RunStatus::Failed ||
               d.summary.status == store::RunStatus::Interrupted;
    o.error = QString::fromStdString(d.error);
    for (const store::CheckpointRecord& c : s.checkpoints(run_.id))
      o.checkpoints << QString::fromStdString(c.path);
    o.final_weights = QString::fromStdString(d.summary.final_weights);
    emit runEnded(o);
  } catch (const std::exception& e) {
    emit readTrouble(QString::fromStdString(e.what()));
  }
}

}  // namespace tr::gui

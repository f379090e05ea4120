// SPDX-License-Identifier: GPL-3.0-or-later
// SetTrainingCommand: applies a settings snapshot and folds same-field edits.
#include "set_training_command.h"

#include <QCoreApplication>
#include <tuple>

namespace tr::gui {

namespace {

// The devices are left out: ProjectDocument::setSettings never applies them.
bool same(const ProjectSettings& a, const ProjectSettings& b) {
  const DatasetSpec &d = a.dataset, &e = b.dataset;
  const TrainingSpec &t = a.training, &u = b.training;
  const OptimizerSpec &o = t.optimizer, &p = u.optimizer;
  const ScheduleSpec &s = t.schedule, &r = u.schedule;
  return std::tie(a.name, a.description) == std::tie(b.name, b.description) &&
         std::tie(d.kind, d.path, d.val_path, d.skip_bad_images, d.height, d.width, d.channels,
                  d.classes, d.train_size, d.val_size, d.mean, d.std, d.random_crop_padding,
                  d.random_flip) == std::tie(e.kind, e.path, e.val_path, e.skip_bad_images,
                                             e.height, e.width, e.channels, e.classes, e.train_size,
                                             e.val_size, e.mean, e.std, e.random_crop_padding,
                                             e.random_flip) &&
         std::tie(o.kind, o.lr, o.momentum, o.weight_decay, o.nesterov, o.beta1, o.beta2,
                  o.adam_eps, o.trust_coefficient) ==
             std::tie(p.kind, p.lr, p.momentum, p.weight_decay, p.nesterov, p.beta1, p.beta2,
                      p.adam_eps, p.trust_coefficient) &&
         std::tie(s.kind, s.warmup_epochs, s.min_lr, s.step_epochs, s.gamma) ==
             std::tie(r.kind, r.warmup_epochs, r.min_lr, r.step_epochs, r.gamma) &&
         std::tie(t.epochs, t.global_batch, t.precision, t.seed, t.ema, t.ema_decay,
                  t.sync_batch_norm) == std::tie(u.epochs, u.global_batch, u.precision, u.seed,
                                                 u.ema, u.ema_decay, u.sync_batch_norm);
}

}  // namespace

SetTrainingCommand::SetTrainingCommand(ProjectDocument* doc, ProjectSettings before,
                                       ProjectSettings after, QString field, const QString& label)
    : doc_(doc), before_(std::move(before)), after_(std::move(after)), field_(std::move(field)) {
  setText(QCoreApplication::translate("SetTrainingCommand", "Set %1").arg(label));
}

void SetTrainingCommand::redo() {
  doc_->setSettings(after_);
}

void SetTrainingCommand::undo() {
  doc_->setSettings(before_);
}

bool SetTrainingCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = static_cast<const SetTrainingCommand*>(other);
  if (o->field_ != field_) return false;
  after_ = o->after_;
  setObsolete(same(before_, after_));
  return true;
}

}  // namespace tr::gui

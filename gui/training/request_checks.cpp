// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/request_checks.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTemporaryFile>

namespace tr::gui {

namespace {

// The translation context of this file's text.
struct RequestCheckText {
  Q_DECLARE_TR_FUNCTIONS(tr::gui::TrainingView)
};

QString check_resume_path(const QString& path) {
  const QFileInfo f(path);
  const QString advice =
      RequestCheckText::tr("Choose a .ckpt file written by a training run of this project.");
  if (!f.exists())
    return RequestCheckText::tr("The checkpoint '%1' does not exist. %2")
        .arg(QDir::toNativeSeparators(path), advice);
  if (f.isDir())
    return RequestCheckText::tr("'%1' is a folder, not a checkpoint file. %2")
        .arg(QDir::toNativeSeparators(path), advice);
  if (!f.isReadable())
    return RequestCheckText::tr("The checkpoint '%1' cannot be read (no permission). %2")
        .arg(QDir::toNativeSeparators(path), advice);
  return {};
}

QString check_checkpoint_dir(const QString& dir) {
  const QString shown = QDir::toNativeSeparators(dir);
  const QString advice = RequestCheckText::tr("Choose a folder you can write to.");
  const QFileInfo f(dir);
  if (f.exists() && !f.isDir())
    return RequestCheckText::tr("The checkpoint folder '%1' is a file. %2").arg(shown, advice);
  if (!QDir().mkpath(dir))
    return RequestCheckText::tr("Cannot create the checkpoint folder '%1'. %2").arg(shown, advice);
  // Permissions alone do not tell (read-only mounts, ACLs): try a file.
  QTemporaryFile probe(QDir(dir).filePath(QStringLiteral(".write-test-XXXXXX")));
  if (!probe.open())
    return RequestCheckText::tr("Cannot write into the checkpoint folder '%1': %2. %3")
        .arg(shown, probe.errorString(), advice);
  return {};
}

}  // namespace

QString check_request(const Project& project, const TrainingRequest& request) {
  if (request.epochs < 0)
    return RequestCheckText::tr(
               "The number of epochs must be positive (or 0 for the project's %1).")
        .arg(project.training.epochs);
  if (request.max_steps < -1)
    return RequestCheckText::tr("The step limit must be 0 or more (or -1 for none), not %1.")
        .arg(request.max_steps);
  if (request.eval_ema && !project.training.ema)
    return RequestCheckText::tr(
               "Validation on the EMA weights needs the EMA: enable training.ema in the "
               "project '%1', or leave the EMA option off.")
        .arg(QString::fromStdString(project.name));
  if (request.resume_run > 0 && !request.resume_path.isEmpty())
    return RequestCheckText::tr(
               "Run %1 continues from its own checkpoint: leave the checkpoint to resume from "
               "empty.")
        .arg(request.resume_run);
  if (!request.resume_path.isEmpty())
    if (QString e = check_resume_path(request.resume_path); !e.isEmpty()) return e;
  if (!request.checkpoint_dir.isEmpty())
    if (QString e = check_checkpoint_dir(request.checkpoint_dir); !e.isEmpty()) return e;
  return {};
}

}  // namespace tr::gui

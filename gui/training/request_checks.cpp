// SPDX-License-Identifier: GPL-3.0-or-later
#include "training/request_checks.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QTemporaryFile>

namespace tr::gui {

namespace {

QString tr_(const char* text) {
  return QCoreApplication::translate("tr::gui::TrainingView", text);
}

QString check_resume_path(const QString& path) {
  const QFileInfo f(path);
  const QString advice = tr_("Choose a .ckpt file written by a training run of this project.");
  if (!f.exists())
    return tr_("The checkpoint '%1' does not exist. %2")
        .arg(QDir::toNativeSeparators(path), advice);
  if (f.isDir())
    return tr_("'%1' is a folder, not a checkpoint file. %2")
        .arg(QDir::toNativeSeparators(path), advice);
  if (!f.isReadable())
    return tr_("The checkpoint '%1' cannot be read (no permission). %2")
        .arg(QDir::toNativeSeparators(path), advice);
  return {};
}

QString check_checkpoint_dir(const QString& dir) {
  const QString shown = QDir::toNativeSeparators(dir);
  const QString advice = tr_("Choose a folder you can write to.");
  const QFileInfo f(dir);
  if (f.exists() && !f.isDir())
    return tr_("The checkpoint folder '%1' is a file. %2").arg(shown, advice);
  if (!QDir().mkpath(dir))
    return tr_("Cannot create the checkpoint folder '%1'. %2").arg(shown, advice);
  // Permissions alone do not tell (read-only mounts, ACLs): try a file.
  QTemporaryFile probe(QDir(dir).filePath(QStringLiteral(".write-test-XXXXXX")));
  if (!probe.open())
    return tr_("Cannot write into the checkpoint folder '%1': %2. %3")
        .arg(shown, probe.errorString(), advice);
  return {};
}

}  // namespace

QString check_request(const Project& project, const TrainingRequest& request) {
  if (request.epochs < 0)
    return tr_("The number of epochs must be positive (or 0 for the project's %1).")
        .arg(project.training.epochs);
  if (request.max_steps < -1)
    return tr_("The step limit must be 0 or more (or -1 for none), not %1.").arg(request.max_steps);
  if (request.eval_ema && !project.training.ema)
    return tr_("Validation on the EMA weights needs the EMA: enable training.ema in the "
               "project '%1', or leave the EMA option off.")
        .arg(QString::fromStdString(project.name));
  if (request.resume_run > 0 && !request.resume_path.isEmpty())
    return tr_("Run %1 continues from its own checkpoint: leave the checkpoint to resume from "
               "empty.")
        .arg(request.resume_run);
  if (!request.resume_path.isEmpty())
    if (QString e = check_resume_path(request.resume_path); !e.isEmpty()) return e;
  if (!request.checkpoint_dir.isEmpty())
    if (QString e = check_checkpoint_dir(request.checkpoint_dir); !e.isEmpty()) return e;
  return {};
}

}  // namespace tr::gui

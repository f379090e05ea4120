// SPDX-License-Identifier: GPL-3.0-or-later
// A program run to its end with its output kept, for the tests that drive
// renaissance-cli and the Python checkers.
#pragma once

#include <QDir>
#include <QProcess>
#include <QString>
#include <QStringList>

namespace tr::test {

struct ProcessRun {
  int code = -1;  // -1: it crashed or ran past five minutes
  QString out;    // stdout and stderr
};

inline ProcessRun run_process(const QString& program, const QStringList& args) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(program, args);
  if (!p.waitForFinished(300000)) return {};
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
          QString::fromUtf8(p.readAll())};
}

// Trains `project` (a file) for three steps with `cli` (renaissance-cli),
// checkpoints into `folder`, and returns the checkpoint; fails the test
// program when training fails.
inline QString train_checkpoint(const QString& cli, const QString& project, const QString& folder) {
  const ProcessRun r = run_process(cli, {"train", project, "--max-steps", "3", "--no-store",
                                         "--no-validation", "--checkpoint-dir", folder});
  if (r.code != 0) qFatal("training %s failed: %s", qPrintable(project), qPrintable(r.out));
  return QDir(folder).filePath(QDir(folder).entryList({"*.ckpt"}).value(0));
}

}  // namespace tr::test

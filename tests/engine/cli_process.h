// SPDX-License-Identifier: GPL-3.0-or-later
// A program run to its end with its output kept, for the tests that drive
// renaissance-cli and the Python checkers.
#pragma once

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

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

// tests/data/projects/tiny-synthetic.json with `train_size` training
// samples (and `epochs`, when > 0), written as `name` into `folder`: runs
// long enough to stop or kill in the middle. Empty when it cannot be written.
inline QString tiny_synthetic(const QString& folder, const QString& name, int64_t train_size,
                              int64_t epochs = 0) {
  QFile in(QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json");
  if (!in.open(QIODevice::ReadOnly)) return {};
  nlohmann::json p = nlohmann::json::parse(in.readAll().toStdString());
  p["dataset"]["train_size"] = train_size;
  if (epochs > 0) p["training"]["epochs"] = epochs;
  const QString path = QDir(folder).filePath(name);
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly)) return {};
  const QByteArray text = QByteArray::fromStdString(p.dump(2));
  return out.write(text) == text.size() ? path : QString();
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

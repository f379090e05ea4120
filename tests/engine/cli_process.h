// SPDX-License-Identifier: GPL-3.0-or-later
// A program run to its end with its output kept, for the tests that drive
// renaissance-cli and the Python checkers.
#pragma once

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

}  // namespace tr::test

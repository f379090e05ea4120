// SPDX-License-Identifier: GPL-3.0-or-later
// Ctrl-C and SIGTERM stop `renaissance-cli train` at a step boundary: exit
// status 130 or 143, a step checkpoint that --resume trains on from the
// next batch, and the run recorded as stopped; a signal delivered twice at
// once (as `timeout` does) is one request.
#include <QtTest>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "cli_process.h"

using nlohmann::json;

namespace {

struct Result {
  int code = -1;
  QString out, err;
};

QProcessEnvironment clean_env() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("RENAISSANCE_STORE");
  return env;
}

Result run_cli(const QStringList& args) {
  QProcess p;
  p.setProcessEnvironment(clean_env());
  p.start(QStringLiteral(TR_CLI), args);
  if (!p.waitForFinished(300000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

json runs_json(const QString& store) {
  const Result r = run_cli({"runs", "list", "--json", "--store", store});
  if (r.code != 0) return json();
  return json::parse(r.out.toStdString(), nullptr, false);
}

}  // namespace

class TestCliSignals : public QObject {
  Q_OBJECT

  // Trains until the store holds a few steps, sends `signal`, and checks
  // the stop, the record and the resume.
  void stopsOn(int signal, int code, const QString& name, bool twice = false) {
    QTemporaryDir dir;
    // ten million training samples: an epoch of 156,250 steps, so the signal
    // lands inside the first epoch on any machine.
    const QString project = tr::test::tiny_synthetic(dir.path(), "long-epoch.json", 10000000);
    QVERIFY(!project.isEmpty());
    const QString store = dir.filePath("runs.sqlite");
    const QString ckpt = dir.filePath("ckpt");
    QProcess p;
    p.setProcessEnvironment(clean_env());
    // A shell without job control starts background jobs with SIGINT
    // ignored, and the CLI keeps an inherited ignore (as every program
    // does): give the child the default, whatever this test inherited.
    p.setChildProcessModifier([] { ::signal(SIGINT, SIG_DFL); });
    p.start(QStringLiteral(TR_CLI),
            {"train", project, "--checkpoint-dir", ckpt, "--store", store, "--threads", "1"});
    QVERIFY(p.waitForStarted());
    // Steps reach the store within its flush interval; wait for some, as
    // another process would see them.
    int steps = 0;
    QElapsedTimer timer;
    timer.start();
    while (steps < 3 && timer.elapsed() < 60000 && p.state() == QProcess::Running) {
      QThread::msleep(50);
      const json runs = runs_json(store);
      if (runs.is_array() && runs.size() == 1) steps = runs[0].at("steps").get<int>();
    }
    QVERIFY2(steps >= 3, "the training never committed 3 steps");
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), signal), 0);
    // `timeout` signals the process and then its group: the same request
    // twice in a row, which must not count as a second one.
    if (twice) QCOMPARE(::kill(static_cast<pid_t>(p.processId()), signal), 0);
    QVERIFY2(p.waitForFinished(60000), "training went on after the signal");
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QVERIFY2(p.exitCode() == code,
             qPrintable(QString("exit %1\n%2\n%3").arg(p.exitCode()).arg(out, err)));

    // "stopped on SIGINT after N steps; continue with --resume-run 1 (or --resume PATH)"
    const QRegularExpression line("stopped on " + name +
                                  " after (\\d+) steps; continue with --resume-run 1 "
                                  "\\(or --resume (\\S+)\\)\\n");
    const QRegularExpressionMatch m = line.match(out);
    QVERIFY2(m.hasMatch(), qPrintable(out));
    const int stopped_at = m.captured(1).toInt();
    const QString saved = m.captured(2);
    QVERIFY(stopped_at >= steps);
    QCOMPARE(saved, ckpt + QString("/tiny-synthetic-step%1.ckpt").arg(stopped_at));
    QVERIFY(QFile::exists(saved));

    json runs = runs_json(store);
    QVERIFY(runs.is_array());
    QCOMPARE(runs.size(), size_t{1});
    QCOMPARE(runs[0].at("status"), "stopped");
    QCOMPARE(runs[0].at("steps").get<int>(), stopped_at);  // every trained step was flushed

    // The resume starts at the first batch not trained and trains on.
    const QString summary = dir.filePath("summary.json");
    const Result r = run_cli({"train", project, "--resume", saved, "--max-steps",
                              QString::number(stopped_at + 2), "--no-validation", "--store", store,
                              "--summary", summary});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains(QString("resuming from %1: epoch 1, batch %2, step %3")
                                .arg(saved)
                                .arg(stopped_at + 1)
                                .arg(stopped_at)),
             qPrintable(r.out));
    QFile f(summary);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const json s = json::parse(f.readAll().toStdString());
    QCOMPARE(s.at("final").at("steps").get<int>(), stopped_at + 2);
    runs = runs_json(store);
    QCOMPARE(runs.size(), size_t{2});
    QCOMPARE(runs[1].at("steps").get<int>(), stopped_at + 2);  // a resumed run counts on
  }

 private slots:
  void ctrlCStopsWithACheckpoint() { stopsOn(SIGINT, 130, "SIGINT"); }
  void sigtermStopsWithACheckpoint() { stopsOn(SIGTERM, 143, "SIGTERM", true); }
};

QTEST_GUILESS_MAIN(TestCliSignals)
#include "test_cli_signals.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// renaissance-cli train records runs and `runs` reads them back: list,
// show, compare, export, note, tag, delete; the store's location (flag,
// environment, XDG); a training process killed with SIGKILL; `list` cut to
// the width; refusals.
#include <QtTest>

#include <sqlite3.h>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

struct Result {
  int code = -1;
  QString out, err;
};

Result run_cli(const QStringList& args, const QProcessEnvironment& env) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(TR_CLI), args);
  if (!p.waitForFinished(300000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

// The environment without a store variable, so each test says where the store is.
QProcessEnvironment clean_env() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove("RENAISSANCE_STORE");
  return env;
}

Result run_cli(const QStringList& args) {
  return run_cli(args, clean_env());
}

QString tiny() {
  return QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json";
}

QByteArray bytes_of(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

json runs_json(const QString& store) {
  const Result r = run_cli({"runs", "list", "--json", "--store", store});
  if (r.code != 0) return json();
  return json::parse(r.out.toStdString(), nullptr, false);
}

}  // namespace

class TestCliRuns : public QObject {
  Q_OBJECT

 private slots:
  void trainRecordsAndRunsReadsBack() {
    QTemporaryDir dir;
    const QString store = dir.filePath("runs.sqlite");
    Result r = run_cli({"train", tiny(), "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("recording run 1 in " + store), qPrintable(r.out));
    r = run_cli({"train", tiny(), "--store", store, "--max-steps", "3", "--seed", "5"});
    QVERIFY2(r.code == 0, qPrintable(r.err));

    json runs = runs_json(store);
    QVERIFY(runs.is_array());
    QCOMPARE(runs.size(), size_t{2});
    QCOMPARE(runs[0].at("status"), "finished");
    QCOMPARE(runs[0].at("steps").get<int>(), 20);  // 600 samples / 64 = 10 steps, 2 epochs
    QCOMPARE(runs[0].at("epochs").get<int>(), 2);
    QVERIFY(runs[0].at("final").at("val_top1").get<double>() > 0.5);
    QCOMPARE(runs[0].at("name"), "tiny-synthetic");
    QCOMPARE(runs[0].at("devices"), "cpu:1");
    QCOMPARE(runs[1].at("status"), "finished");  // --max-steps ends a run as finished
    QCOMPARE(runs[1].at("steps").get<int>(), 3);
    QVERIFY(runs[1].at("final").at("val_top1").is_number());  // and validates it
    QCOMPARE(runs[1].at("seed").get<int>(), 5);

    r = run_cli({"runs", "list", "--store", store});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("finished"));

    r = run_cli({"runs", "show", "1", "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (const char* part : {"run 1: tiny-synthetic (finished)", "optimizer/lr",
                             "epochs:", "final metrics", "VAL TOP-1"})
      QVERIFY2(r.out.contains(part), part);
    // The build of the CPU kernels that ran, as `devices` names it.
    const Result devices = run_cli({"devices", "--json"});
    QCOMPARE(devices.code, 0);
    const QString kernels = QString::fromStdString(
        json::parse(devices.out.toStdString()).at("cpu").at("kernels").get<std::string>());
    QVERIFY(!kernels.isEmpty());
    QVERIFY2(QRegularExpression("cpu_kernels +" + QRegularExpression::escape(kernels) + "\\n")
                 .match(r.out)
                 .hasMatch(),
             qPrintable(r.out));
    r = run_cli({"runs", "show", "1", "--project", "--store", store});
    QCOMPARE(json::parse(r.out.toStdString()).at("name"), "tiny-synthetic");

    r = run_cli({"runs", "compare", "1", "2", "--metric", "train_loss", "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("training/seed"));
    QVERIFY(r.out.contains("training/max_steps"));
    QVERIFY(!r.out.contains("training/optimizer/lr"));  // equal: not a difference
    QVERIFY(r.out.contains("train_loss by epoch"));
    QVERIFY(r.out.contains("best train_loss: run 1"));

    const QString csv = dir.filePath("curves.csv");
    r = run_cli({"runs", "export", "1", "2", "--csv", csv, "--store", store});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList lines = QString::fromUtf8(bytes_of(csv)).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 20 + 2 + 3 + 1);  // header, steps and epochs of both runs
    QVERIFY(lines[0].startsWith("run_id,kind,epoch,step,loss"));
    QCOMPARE(lines.filter(QRegularExpression("^2,step,")).size(), 3);

    r = run_cli({"runs", "note", "1", "the", "first", "try", "--store", store});
    QCOMPARE(r.code, 0);
    r = run_cli({"runs", "tag", "1", "baseline", "--store", store});
    QCOMPARE(r.code, 0);
    r = run_cli({"runs", "show", "1", "--store", store});
    QVERIFY(r.out.contains("the first try"));
    QVERIFY(r.out.contains("baseline"));
    r = run_cli({"runs", "list", "--filter", "baseline", "--json", "--store", store});
    runs = json::parse(r.out.toStdString());
    QCOMPARE(runs.size(), size_t{1});
    QCOMPARE(runs[0].at("tags"), json::array({"baseline"}));

    r = run_cli({"runs", "delete", "2", "--store", store});
    QCOMPARE(r.code, 0);
    QCOMPARE(runs_json(store).size(), size_t{1});
    r = run_cli({"runs", "show", "2", "--store", store});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("no run 2"), qPrintable(r.err));
  }

  void failedTrainingIsRecordedWithItsError() {
    QTemporaryDir dir;
    QFile in(tiny());
    QVERIFY(in.open(QIODevice::ReadOnly));
    QString text = QString::fromUtf8(in.readAll());
    text.replace("\"lr\": 0.05", "\"lr\": 1e30");
    const QString project = dir.filePath("diverges.json");
    QFile out(project);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(text.toUtf8());
    out.close();
    const QString store = dir.filePath("runs.sqlite");
    const Result r = run_cli({"train", project, "--store", store});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("NaN"));
    QCOMPARE(runs_json(store)[0].at("status"), "failed");
    const Result show = run_cli({"runs", "show", "1", "--store", store});
    QVERIFY2(show.out.contains("error") && show.out.contains("NaN"), qPrintable(show.out));
  }

  void storeLocationAndNoStore() {
    QTemporaryDir dir;
    QProcessEnvironment env = clean_env();
    const QString by_env = dir.filePath("env/runs.sqlite");
    env.insert("RENAISSANCE_STORE", by_env);
    Result r = run_cli({"train", tiny(), "--max-steps", "2", "--no-store"}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!r.out.contains("recording"));
    QVERIFY(!QFile::exists(by_env));
    r = run_cli({"train", tiny(), "--max-steps", "2"}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QFile::exists(by_env));  // folders created on first use
    r = run_cli({"runs", "list"}, env);
    QVERIFY(r.out.contains("finished"));

    env = clean_env();
    env.insert("XDG_DATA_HOME", dir.filePath("xdg"));
    r = run_cli({"runs", "list"}, env);
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains("no runs recorded"));
    QVERIFY(QFile::exists(dir.filePath("xdg/renaissance/runs.sqlite")));
    env.remove("XDG_DATA_HOME");
    env.insert("HOME", dir.filePath("home"));
    r = run_cli({"runs", "list"}, env);
    QCOMPARE(r.code, 0);
    QVERIFY(QFile::exists(dir.filePath("home/.local/share/renaissance/runs.sqlite")));

    r = run_cli({"train", tiny(), "--store", dir.filePath("x.sqlite"), "--no-store"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--no-store"));
  }

  void killedTrainingIsInterrupted() {
    QTemporaryDir dir;
    const QString store = dir.filePath("runs.sqlite");
    QProcess p;
    p.setProcessEnvironment(clean_env());
    p.start(QStringLiteral(TR_CLI),
            {"train", tiny(), "--epochs", "100000", "--no-validation", "--store", store});
    QVERIFY(p.waitForStarted());
    // Wait, reading the store as another process would, until steps are committed.
    int steps = 0;
    QElapsedTimer timer;
    timer.start();
    while (steps < 30 && timer.elapsed() < 120000) {
      QThread::msleep(100);
      const json runs = runs_json(store);
      if (runs.is_array() && runs.size() == 1) {
        QCOMPARE(runs[0].at("status"), "running");
        steps = runs[0].at("steps").get<int>();
      }
    }
    p.kill();  // SIGKILL
    p.waitForFinished();
    QVERIFY2(steps >= 30, "the training never committed 30 steps");
    const Result r = run_cli({"runs", "list", "--json", "--store", store});
    QVERIFY2(r.err.contains("run 1 was interrupted"), qPrintable(r.err));
    const json run = json::parse(r.out.toStdString())[0];
    QCOMPARE(run.at("status"), "interrupted");
    QVERIFY(run.at("steps").get<int>() >= steps);  // everything committed is there
    const QString csv = dir.filePath("c.csv");
    QCOMPARE(run_cli({"runs", "export", "1", "--csv", csv, "--store", store}).code, 0);
    const QStringList lines = QString::fromUtf8(bytes_of(csv)).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.filter(QRegularExpression("^1,step,")).size(), run.at("steps").get<int>());
  }

  // A 100,000-character project name (in three scripts) is cut to the
  // width at code point boundaries; --wide shows it whole.
  void listFitsTheWidth() {
    QTemporaryDir dir;
    const QString store = dir.filePath("runs.sqlite");
    Result r = run_cli({"train", tiny(), "--store", store, "--max-steps", "1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QString name;
    for (int i = 0; i < 25000; ++i) name += QString::fromUtf8("ab\u00e9\u65e5");  // 1-3 bytes
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(store.toUtf8().constData(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    QCOMPARE(sqlite3_prepare_v2(db, "UPDATE runs SET name = ?1", -1, &st, nullptr), SQLITE_OK);
    const QByteArray utf8 = name.toUtf8();
    sqlite3_bind_text(st, 1, utf8.constData(), static_cast<int>(utf8.size()), SQLITE_TRANSIENT);
    QCOMPARE(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);

    // Code points per line; a cut inside a UTF-8 sequence would decode to U+FFFD.
    auto widest = [](const QString& out) {
      qsizetype w = 0;
      for (const QString& line : out.split('\n')) {
        if (line.contains(QChar::ReplacementCharacter)) return qsizetype{-1};
        w = std::max(w, line.toUcs4().size());
      }
      return w;
    };
    for (const int columns : {100, 40}) {
      QProcessEnvironment env = clean_env();
      env.insert("COLUMNS", QString::number(columns));
      r = run_cli({"runs", "list", "--store", store}, env);
      QCOMPARE(r.code, 0);
      const qsizetype w = widest(r.out);
      QVERIFY2(w > 0 && w <= columns, qPrintable(QString("%1 columns: %2").arg(columns).arg(w)));
      QVERIFY2(r.out.contains(QString::fromUtf8("\u2026")), qPrintable(r.out));
    }
    QProcessEnvironment env = clean_env();
    env.insert("COLUMNS", "120");
    r = run_cli({"runs", "list", "--store", store}, env);
    // At 120 columns only the free-text columns give up width: the rest is whole.
    const QRegularExpression row(QString::fromUtf8(
        "\\n 1  \\S+\\s+ab\\S*\u2026\\s+cpu:1\\s+fp32\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d\\s"));
    QVERIFY2(r.out.contains(row), qPrintable(r.out));
    QVERIFY2(r.out.contains("VAL TOP-1  TAGS"), qPrintable(r.out));
    r = run_cli({"runs", "list", "--store", store, "--wide"}, env);
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.contains(name));
    // Not a terminal and no usable COLUMNS: 80.
    env.insert("COLUMNS", "wide");
    r = run_cli({"runs", "list", "--store", store}, env);
    QCOMPARE(r.code, 0);
    QVERIFY2(r.err.contains("ignoring COLUMNS='wide'"), qPrintable(r.err));
    QCOMPARE(widest(r.out), qsizetype{80});
  }

  void refusesForeignAndNewerStores() {
    QTemporaryDir dir;
    const QString text = dir.filePath("notes.txt");
    {
      QFile f(text);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("not a database\n");
    }
    Result r = run_cli({"runs", "list", "--store", text});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("not a run store"), qPrintable(r.err));
    r = run_cli({"train", tiny(), "--store", text});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("not a run store"), qPrintable(r.err));
    QVERIFY(!r.out.contains("epoch 1/"));  // refused before training
    QCOMPARE(bytes_of(text), QByteArray("not a database\n"));

    const QString newer = dir.filePath("newer.sqlite");
    QCOMPARE(run_cli({"runs", "list", "--store", newer}).code, 0);  // creates it
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(newer.toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    const QByteArray before = bytes_of(newer);
    r = run_cli({"runs", "list", "--store", newer});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("newer version") && r.err.contains("99"), qPrintable(r.err));
    QCOMPARE(bytes_of(newer), before);
  }

  void badArguments() {
    QTemporaryDir dir;
    const QString store = dir.filePath("runs.sqlite");
    const struct {
      QStringList args;
      int code;
      const char* says;
    } cases[] = {
        {{"runs"}, 2, "subcommand"},
        {{"runs", "frobnicate"}, 2, "unknown subcommand"},
        {{"runs", "show", "abc"}, 2, "positive integer"},
        {{"runs", "show"}, 2, "missing one run id"},
        {{"runs", "export", "1"}, 2, "--csv"},
        {{"runs", "compare", "1"}, 2, "missing two or more run ids"},
        {{"runs", "list", "--bogus"}, 2, "--bogus"},
        {{"runs", "tag", "1", "two words"}, 1, "single words"},
        {{"runs", "compare", "1", "2", "--metric", "accuracy"}, 1, "val_top1"},
        {{"runs", "delete", "7"}, 1, "no run 7"},
    };
    for (const auto& c : cases) {
      const Result r = run_cli(c.args + QStringList{"--store", store});
      QVERIFY2(r.code == c.code, qPrintable(c.args.join(' ') + ": " + r.err));
      QVERIFY2(r.err.contains(c.says), qPrintable(c.args.join(' ') + ": " + r.err));
    }
  }
};

QTEST_GUILESS_MAIN(TestCliRuns)
#include "test_cli_runs.moc"

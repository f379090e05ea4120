// SPDX-License-Identifier: GPL-3.0-or-later
// renaissance-cli train and bench end to end on a tiny synthetic project:
// progress lines, the JSON summary, the Chrome trace, the fallback from CUDA
// devices to the CPU, and clear failures.
#include <QtTest>

#include <nlohmann/json.hpp>
#include <set>

using nlohmann::json;

namespace {

struct Result {
  int code = -1;
  QString out, err;
};

Result run_cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(TR_CLI), args);
  if (!p.waitForFinished(300000)) return {};
  return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

QString tiny() {
  return QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json";
}

json read_json(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return json::parse(f.readAll().toStdString(), nullptr, false);
}

}  // namespace

class TestCliTrain : public QObject {
  Q_OBJECT
  QTemporaryDir store_dir_;

 private slots:
  void initTestCase() {
    // `train` records every run; run outside CTest, this keeps them out of the user's store.
    if (qEnvironmentVariableIsEmpty("RENAISSANCE_STORE"))
      qputenv("RENAISSANCE_STORE", QFile::encodeName(store_dir_.filePath("runs.sqlite")));
  }

  void trainsWithSummaryAndTrace() {
    QTemporaryDir dir;
    const QString summary = dir.filePath("summary.json");
    const QString trace = dir.filePath("trace.json");
    const Result r = run_cli(
        {"train", tiny(), "--summary", summary, "--trace", trace, "--profile-steps", "2:4"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("epoch 1/2"));
    QVERIFY(r.out.contains("epoch 2/2"));
    QVERIFY(r.out.contains("val_top-1"));
    const json s = read_json(summary);
    QCOMPARE(s.at("epochs").size(), size_t{2});
    for (const char* key : {"epoch", "train_loss", "val_loss", "val_top1", "images_per_s"})
      QVERIFY2(s.at("epochs")[1].contains(key), key);
    QVERIFY(s.at("final").at("val_top1").get<double>() > 0.5);
    QVERIFY(s.at("epochs")[1].at("train_loss").get<double>() <
            s.at("epochs")[0].at("train_loss").get<double>());
    const json t = read_json(trace);
    QVERIFY(t.contains("traceEvents"));
    int spans = 0;
    std::set<int64_t> steps;
    for (const json& e : t.at("traceEvents"))
      if (e.at("ph") == "X") {
        ++spans;
        steps.insert(e.at("args").at("step").get<int64_t>());
      }
    QVERIFY(spans > 20);
    QString seen;
    for (int64_t k : steps) seen += QString::number(k) + ' ';
    QVERIFY2(steps == (std::set<int64_t>{2, 3}), qPrintable("spans of steps " + seen));  // 2:4
  }

  void benchPrintsOneJsonLine() {
    const Result r = run_cli({"bench", tiny(), "--steps", "5", "--warmup", "2", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const json j = json::parse(r.out.trimmed().toStdString());
    QVERIFY(j.at("median_ms_per_step").get<double>() > 0);
    QVERIFY(j.at("images_per_s").get<double>() > 0);
    QCOMPARE(j.at("steps").get<int>(), 5);
    QVERIFY(!j.at("fell_back").get<bool>());
  }

  // The device alone: one batch left on the device for every step of an
  // epoch (22 steps cross two epoch ends of tiny's 10 batches), no step
  // waiting for the input pipeline; without it the wait is reported too.
  void benchCanTrainOnOneResidentBatch() {
    Result r =
        run_cli({"bench", tiny(), "--steps", "20", "--warmup", "2", "--resident-batch", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    json j = json::parse(r.out.trimmed().toStdString());
    QVERIFY(j.at("resident_batch").get<bool>());
    QCOMPARE(j.at("steps").get<int>(), 20);
    QCOMPARE(j.at("median_input_wait_ms").get<double>(), 0.0);
    QVERIFY(j.at("images_per_s").get<double>() > 0);
    r = run_cli({"bench", tiny(), "--steps", "3", "--warmup", "1", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    j = json::parse(r.out.trimmed().toStdString());
    QVERIFY(!j.at("resident_batch").get<bool>());
    QVERIFY(j.at("median_input_wait_ms").get<double>() >= 0.0);
    QVERIFY(j.at("median_input_wait_ms").get<double>() <= j.at("median_ms_per_step").get<double>());
  }

  void mixedPrecisionTrains() {
    // FP16 input buffers pad the single channel to 4: the transfer converts the layout.
    const Result r = run_cli({"train", tiny(), "--precision", "amp", "--epochs", "1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("epoch 1/1"), qPrintable(r.out));
    QVERIFY(r.out.contains("val_top-1"));
  }

  // Without a CUDA device (or a CUDA build) a cuda:0 run trains on one CPU
  // rank and says why; the CUDA backend's measuring options are refused
  // there, and bad values of them anywhere.
  void cudaDevicesFallBackToTheCpu() {
    Result r = run_cli({"bench", tiny(), "--streams", "3"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("'--streams' takes 5"), qPrintable(r.err));
    r = run_cli({"bench", tiny(), "--capture", "maybe"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("'--capture' takes on"), qPrintable(r.err));
    r = run_cli({"train", tiny(), "--conv-algorithms", "quickest"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.startsWith("renaissance-cli train: option '--conv-algorithms' takes fastest") &&
                 r.err.contains("got 'quickest'"),
             qPrintable(r.err));
    r = run_cli({"train", tiny(), "--devices", "cuda:0", "--epochs", "1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    if (!r.err.contains("training on cpu:1 instead"))
      QSKIP("this machine trains cuda:0 on a GPU; the fallback is for machines without one");
    QVERIFY2(r.out.contains("epoch 1/1"), qPrintable(r.out));
    // A benchmark of cuda:0 must not report the CPU as the GPU: refused,
    // unless --allow-fallback, and then its JSON says so.
    r = run_cli({"bench", tiny(), "--devices", "cuda:0", "--steps", "2"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("cuda:0 requested, but ") && r.err.contains("--allow-fallback"),
             qPrintable(r.err));
    r = run_cli({"bench", tiny(), "--devices", "cuda:0", "--steps", "2", "--warmup", "1",
                 "--allow-fallback", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("training on cpu:1 instead"), qPrintable(r.err));
    const json j = json::parse(r.out.trimmed().split('\n').last().toStdString());
    QCOMPARE(j.at("backend").get<std::string>(), std::string("cpu"));
    QVERIFY(j.at("fell_back").get<bool>());
    QVERIFY(j.at("plan_bytes_per_device").get<uint64_t>() > 0);
    QCOMPARE(j.at("conv_algorithms").get<std::string>(), std::string("fastest"));
    r = run_cli({"bench", tiny(), "--devices", "cuda:0", "--streams", "1", "--steps", "2",
                 "--allow-fallback"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("measure the CUDA backend"), qPrintable(r.err));
  }

  void clearFailures() {
    Result r = run_cli({"train", tiny(), "--profile-steps", "5"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("A:B"));
    r = run_cli({"train", tiny(), "--rewrites", "maybe"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("on or off"));
    r = run_cli({"train", QStringLiteral(TR_PROJECTS_DIR) + "/lenet-fashion.json", "--data",
                 "/nonexistent/fashion"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("/nonexistent/fashion"), qPrintable(r.err));
    r = run_cli({"bench", tiny(), "--steps", "0"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--steps"));
  }

  // A wrong command line is told in its first line: what conflicts with
  // what, or what is missing or left over, and what to do; never the whole
  // usage alone.
  void usageErrorsSayFirstWhatWasWrong() {
    const struct {
      QStringList args;
      const char* first_line;
    } cases[] = {
        {{"train", "P.json", "--resume-run", "7"},
         "renaissance-cli train: --resume-run takes the project from run 7; leave out 'P.json'"},
        {{"train"}, "renaissance-cli train: missing the project file (train <project.json>"},
        {{"train", "a.json", "b.json"},
         "renaissance-cli train: unexpected argument 'b.json': train takes only the project file"},
        {{"plan"}, "renaissance-cli plan: missing the project file (plan <project.json>)"},
        {{"bench", "a.json", "b", "c"}, "renaissance-cli bench: unexpected arguments 'b' 'c'"},
        {{"predict"}, "renaissance-cli predict: missing the project file"},
        {{"onnx"}, "renaissance-cli onnx: missing the subcommand (export, import or ops)"},
        {{"onnx", "import"}, "renaissance-cli onnx: missing the ONNX file"},
        {{"onnx", "ops", "x"}, "renaissance-cli onnx: onnx ops takes no arguments"},
        {{"runs"}, "renaissance-cli runs: missing the subcommand"},
        {{"runs", "show"}, "renaissance-cli runs: missing one run id (runs show ID)"},
        {{"runs", "list", "extra"},
         "renaissance-cli runs: unexpected argument 'extra': runs list takes no arguments"},
        {{}, "renaissance-cli: missing the command"},
    };
    for (const auto& c : cases) {
      const Result r = run_cli(c.args);
      const QString first = r.err.section('\n', 0, 0);
      QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + ": " + r.err));
      QVERIFY2(first.startsWith(QString::fromUtf8(c.first_line)),
               qPrintable(c.args.join(' ') + ": " + first));
      if (first.contains(QStringLiteral("missing")) || first.contains(QStringLiteral("unexpected")))
        QVERIFY2(first.contains(QStringLiteral("--help' shows")) || c.args.size() < 2,
                 qPrintable(c.args.join(' ') + ": " + first));
    }
  }
};

QTEST_GUILESS_MAIN(TestCliTrain)
#include "test_cli_train.moc"

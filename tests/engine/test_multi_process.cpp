// SPDX-License-Identifier: GPL-3.0-or-later
// CPU ranks across processes on loopback: renaissance-cli train started as
// 2 processes of 1 rank and 2 of 2 (--nodes, --node-rank,
// --rendezvous 127.0.0.1:PORT; Gloo between the processes), in FP32 and
// AMP, trains a small CNN with SyncBatchNorm to the very bits of one
// process with as many ranks (final weights and every epoch's figures), the
// run recorded once, by node 0; launched by torchrun's and Slurm's
// variables too; a stop on one process stops all before the same step; a
// process killed during the run makes the other fail, naming it, well
// within the timeout.
#include <QtTest>

#include <csignal>
#include <set>
#include <utility>

#include <renaissance/checkpoint.h>
#include <renaissance/run_store.h>
#include <nlohmann/json.hpp>
#include "core/cpu_features.h"
#include "net/tcp_rendezvous.h"

using nlohmann::json;

namespace {

// tiny-synthetic with 240 validation samples in batches of 30 a rank
// (--devices and --nodes keep the global one where they divide it), global
// batch 48 (600 = 12 x 48 + 24).
QString project(const QTemporaryDir& dir) {
  QFile in(QStringLiteral(TR_TEST_DATA) + "/projects/tiny-synthetic.json");
  if (!in.open(QIODevice::ReadOnly)) return {};
  json p = json::parse(in.readAll().toStdString());
  p["dataset"]["val_size"] = 240;
  p["training"]["global_batch"] = 48;
  p["variants"][2]["batch"] = 30;
  const QString path = dir.filePath("tiny.json");
  QFile out(path);
  if (!out.open(QIODevice::WriteOnly)) return {};
  out.write(QByteArray::fromStdString(p.dump(1)));
  return path;
}

uint16_t free_port() {
  tr::net::RendezvousOptions o;
  o.address = "127.0.0.1:0";
  o.nodes = 2;
  return tr::net::RendezvousServer(o).port();
}

// Without a launcher's variables but those in `launcher`.
QProcess* start(const QStringList& args, const QString& store,
                const std::map<QString, QString>& launcher = {}) {
  auto* p = new QProcess;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  for (const QString& k : env.keys())
    if (k.startsWith("SLURM_") || k == "RANK" || k == "WORLD_SIZE" || k.startsWith("MASTER_"))
      env.remove(k);
  for (const auto& [k, v] : launcher) env.insert(k, v);
  p->setProcessEnvironment(env);
  QStringList all = args;
  all << "--store" << store;
  p->start(QStringLiteral(TR_CLI), all);
  return p;
}

struct Finished {
  int code = -1;
  QString out, err;
};

Finished finish(QProcess* p) {
  Finished f;
  if (p->waitForFinished(300000)) f.code = p->exitCode();
  f.out = QString::fromUtf8(p->readAllStandardOutput());
  f.err = QString::fromUtf8(p->readAllStandardError());
  delete p;
  return f;
}

// `nodes` processes of `ranks` CPU ranks each train `args`; node 0's store
// is `store` (the others' get their own, which must stay empty).
std::vector<Finished> train(int nodes, int ranks, const QStringList& args, const QString& store,
                            const QTemporaryDir& dir) {
  const QString rendezvous = QStringLiteral("127.0.0.1:%1").arg(free_port());
  std::vector<QProcess*> procs;
  for (int n = 0; n < nodes; ++n) {
    QStringList a = args;
    a << "--devices" << QStringLiteral("cpu:%1").arg(ranks);
    if (nodes > 1)
      a << "--nodes" << QString::number(nodes) << "--node-rank" << QString::number(n)
        << "--rendezvous" << rendezvous << "--rendezvous-timeout"
        << "60";
    procs.push_back(
        start(a, n == 0 ? store : dir.filePath(QStringLiteral("node%1.sqlite").arg(n))));
  }
  std::vector<Finished> out;
  for (QProcess* p : procs) out.push_back(finish(p));
  return out;
}

// The final weights a run recorded in `store`.
std::map<std::string, std::vector<float>> final_weights(const QString& store) {
  std::map<std::string, std::vector<float>> out;
  // The store's files sit beside it: NAME.files for NAME.sqlite.
  QString path = store;
  path.chop(QStringLiteral(".sqlite").size());
  path += ".files/run-1/final.ckpt";
  for (const tr::CheckpointTensor& t : tr::read_checkpoint(path.toStdString()).tensors)
    out[t.region + "/" + t.name] = t.values;
  return out;
}

// Two processes of one rank each on a 50-epoch run, started and followed
// until node 1 has printed its first epoch (`seen`, its output so far).
struct LongRun {
  QProcess *n0 = nullptr, *n1 = nullptr;
  QByteArray seen;
  explicit LongRun(const QTemporaryDir& dir) {
    const QString p = project(dir);
    const QString rendezvous = QStringLiteral("127.0.0.1:%1").arg(free_port());
    auto args = [&](int n) {
      return QStringList{"train",
                         p,
                         "--devices",
                         "cpu:1",
                         "--epochs",
                         "50",
                         "--nodes",
                         "2",
                         "--node-rank",
                         QString::number(n),
                         "--rendezvous",
                         rendezvous,
                         "--rendezvous-timeout",
                         "60"};
    };
    n0 = start(args(0), dir.filePath("n0.sqlite"));
    n1 = start(args(1), dir.filePath("n1.sqlite"));
    QElapsedTimer t;
    t.start();
    while (!seen.contains("epoch 1/50") && t.elapsed() < 120000) {
      n1->waitForReadyRead(1000);
      seen += n1->readAllStandardOutput();
    }
  }
  // Node n's end (once).
  Finished finish_node(int n) {
    QProcess*& p = n == 0 ? n0 : n1;
    return finish(std::exchange(p, nullptr));
  }
  // Whatever a failed check left running.
  ~LongRun() {
    for (QProcess* p : {n0, n1})
      if (p) {
        p->kill();
        finish(p);
      }
  }
};

json summary(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  return json::parse(f.readAll().toStdString(), nullptr, false);
}

}  // namespace

class TestMultiProcess : public QObject {
  Q_OBJECT

  // Bit for bit: `nodes` processes x `ranks` against one process of all the
  // ranks, training `project` (tiny-synthetic's variation when empty) with
  // SyncBatchNorm and `extra` options.
  void same_bits(int nodes, int ranks, QString p = {}, const QStringList& extra = {}) {
    QTemporaryDir dir;
    if (p.isEmpty()) p = project(dir);
    QVERIFY(!p.isEmpty());
    // One kernel thread a rank on both sides: some kernels' bits depend on
    // their thread count, which is another matter than the processes'.
    auto args = [&](const char* summary) {
      return QStringList{"train",     p,   "--sync-bn", "on",
                         "--threads", "1", "--summary", dir.filePath(summary)} +
             extra;
    };
    const std::vector<Finished> split =
        train(nodes, ranks, args("split.json"), dir.filePath("split.sqlite"), dir);
    for (size_t n = 0; n < split.size(); ++n)
      QVERIFY2(split[n].code == 0,
               qPrintable(QStringLiteral("node %1: %2%3").arg(n).arg(split[n].out, split[n].err)));
    QVERIFY2(split[1].out.contains("node 0 saves checkpoints and records the run"),
             qPrintable(split[1].out));
    const std::vector<Finished> one =
        train(1, nodes * ranks, args("one.json"), dir.filePath("one.sqlite"), dir);
    QVERIFY2(one[0].code == 0, qPrintable(one[0].err));
    const auto a = final_weights(dir.filePath("split.sqlite"));
    const auto b = final_weights(dir.filePath("one.sqlite"));
    QVERIFY(!a.empty());
    QCOMPARE(a.size(), b.size());
    for (const auto& [name, values] : b) {
      QVERIFY2(a.count(name), name.c_str());
      QVERIFY2(a.at(name) == values, name.c_str());
    }
    const json sa = summary(dir.filePath("split.json")), sb = summary(dir.filePath("one.json"));
    QVERIFY(sb.contains("epochs") && !sb["epochs"].empty());
    QCOMPARE(sa["epochs"].size(), sb["epochs"].size());
    for (size_t e = 0; e < sb["epochs"].size(); ++e)
      for (const char* key : {"train_loss", "val_loss", "val_top1"})
        QVERIFY2(sa["epochs"][e].value(key, json()) == sb["epochs"][e].value(key, json()), key);
    // Only node 0 recorded the run.
    for (int n = 1; n < nodes; ++n)
      QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("node%1.files/run-1").arg(n))));
  }

 private slots:
  void twoProcessesOfOneRankTrainAsOneProcessOfTwo() { same_bits(2, 1); }
  void twoProcessesOfTwoRanksTrainAsOneProcessOfFour() { same_bits(2, 2); }
  void threeProcessesTrainAsOneProcessOfThree() { same_bits(3, 1); }
  // Loss scaling, FP16 features and the overflow flag agree across processes too.
  void twoProcessesTrainAsOneInAmp() { same_bits(2, 1, {}, {"--precision", "amp"}); }
  void twoProcessesTrainAsOneInBf16() {
    if (!tr::detect_cpu_bf16().any())
      QSKIP("this CPU has no BF16 instructions: BF16 training is refused here");
    same_bits(2, 1, {}, {"--precision", "bf16"});
  }

  // The sample projects on Fashion-MNIST, a few steps of 96 samples (which
  // 2 and 3 ranks divide). Fashion-MNIST's 10,000 validation samples do not
  // split over 3 ranks, so 3 processes train without validation.
  void sampleProjectsOnTwoAndThreeProcesses_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("nodes");
    for (const char* name : {"lenet-fashion", "cnn-bn-fashion"})
      for (const int nodes : {2, 3}) QTest::addRow("%s x%d", name, nodes) << QString(name) << nodes;
  }
  void sampleProjectsOnTwoAndThreeProcesses() {
    QFETCH(QString, name);
    QFETCH(int, nodes);
    QStringList extra{"--batch", "96", "--max-steps", "6"};
    if (nodes == 3) extra << "--no-validation";
    same_bits(nodes, 1, QStringLiteral(TR_PROJECTS_DIR) + "/" + name + ".json", extra);
  }

  // Two processes started as torchrun and srun start them: the node options
  // come from their variables (Slurm's rendezvous on the job's first node,
  // "127.0.0.[1-4]", and a port from the job id).
  void launchedByTorchrunAndSlurmConventions() {
    QTemporaryDir dir;
    const QString p = project(dir);
    uint16_t port = 0;
    for (uint16_t candidate = 29500; candidate < 30500 && port == 0; ++candidate) try {
        tr::net::RendezvousOptions o;
        o.address = "127.0.0.1:" + std::to_string(candidate);
        o.nodes = 2;
        tr::net::RendezvousServer probe(o);
        port = candidate;
      } catch (const std::exception&) {
      }
    QVERIFY(port != 0);
    for (const bool slurm : {false, true}) {
      std::vector<QProcess*> procs;
      for (int n = 0; n < 2; ++n) {
        std::map<QString, QString> env;
        if (slurm)
          env = {{"SLURM_PROCID", QString::number(n)},
                 {"SLURM_NTASKS", "2"},
                 {"SLURM_LOCALID", QString::number(n)},
                 {"SLURM_JOB_NODELIST", "127.0.0.[1-4]"},
                 {"SLURM_JOB_ID", QString::number(7000 + port - 29500)}};
        else
          env = {{"RANK", QString::number(n)},
                 {"WORLD_SIZE", "2"},
                 {"LOCAL_RANK", QString::number(n)},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", QString::number(port)}};
        procs.push_back(start({"train", p, "--devices", "cpu:1", "--epochs", "1"},
                              dir.filePath(QStringLiteral("%1-%2.sqlite").arg(slurm).arg(n)), env));
      }
      const Finished f0 = finish(procs[0]), f1 = finish(procs[1]);
      QVERIFY2(f0.code == 0, qPrintable(f0.out + f0.err));
      QVERIFY2(f1.code == 0, qPrintable(f1.out + f1.err));
      const QString how = slurm ? QStringLiteral(
                                      "Slurm's SLURM_PROCID 1 of SLURM_NTASKS 2, "
                                      "rendezvous 127.0.0.1:%1")
                                : QStringLiteral(
                                      "torchrun's RANK 1 of WORLD_SIZE 2, "
                                      "rendezvous 127.0.0.1:%1");
      QVERIFY2(f1.out.contains(how.arg(port)), qPrintable(f1.out));
      QVERIFY2(f1.out.contains("global ranks 1-1 of 2"), qPrintable(f1.out));
    }
    // A launcher asked for whose variables are missing: named.
    const Finished bad =
        finish(start({"train", p, "--launcher", "env"}, dir.filePath("bad.sqlite")));
    QVERIFY(bad.code != 0);
    QVERIFY2(bad.err.contains("WORLD_SIZE is not set"), qPrintable(bad.err));
  }

  // Ctrl-C on node 1 stops both before the same step.
  void aStopOnOneProcessStopsBoth() {
    QTemporaryDir dir;
    LongRun run(dir);
    QVERIFY2(run.seen.contains("epoch 1/50"), run.seen.constData());
    const QByteArray seen = run.seen;
    ::kill(static_cast<pid_t>(run.n1->processId()), SIGINT);
    const Finished f0 = run.finish_node(0), f1 = run.finish_node(1);
    QCOMPARE(f1.code, 130);
    QVERIFY2(f0.code == 0, qPrintable(f0.out + f0.err));
    const QRegularExpression steps("after (\\d+) steps");
    const auto m0 = steps.match(f0.out), m1 = steps.match(QString::fromUtf8(seen) + f1.out);
    QVERIFY2(m0.hasMatch() && f0.out.contains("as another node was asked to"), qPrintable(f0.out));
    QVERIFY2(m1.hasMatch(), qPrintable(f1.out));
    QCOMPARE(m0.captured(1), m1.captured(1));
  }

  // Each node's --trace holds its own ranks, numbered globally, so the two
  // traces of one run do not both claim rank 0.
  void eachNodesTraceNamesItsGlobalRanks() {
    QTemporaryDir dir;
    const QString p = project(dir);
    const QString rendezvous = QStringLiteral("127.0.0.1:%1").arg(free_port());
    std::vector<QProcess*> nodes;
    for (int n = 0; n < 2; ++n)
      nodes.push_back(
          start({"train", p, "--devices", "cpu:2", "--max-steps", "4", "--profile-steps", "1:3",
                 "--no-validation", "--trace", dir.filePath(QStringLiteral("trace%1.json").arg(n)),
                 "--nodes", "2", "--node-rank", QString::number(n), "--rendezvous", rendezvous},
                dir.filePath(QStringLiteral("n%1.sqlite").arg(n))));
    for (int n = 0; n < 2; ++n) {
      const Finished f = finish(nodes[static_cast<size_t>(n)]);
      QVERIFY2(f.code == 0, qPrintable(f.out + f.err));
      const json trace = summary(dir.filePath(QStringLiteral("trace%1.json").arg(n)));
      std::set<int> ranks;
      for (const json& e : trace.value("traceEvents", json::array()))
        if (e.contains("pid") && e.value("ph", "") == "X") ranks.insert(e["pid"].get<int>());
      QCOMPARE(ranks, (std::set<int>{2 * n, 2 * n + 1}));
      QVERIFY2(f.out.contains(QStringLiteral("communication rank %1:").arg(2 * n + 1)),
               qPrintable(f.out));
    }
  }

  // A run of one process of two ranks, stopped, continues as two processes
  // of one rank each (--resume-run, both reading the store node 0 records
  // into) to the very losses of the same run never stopped.
  void aRunResumesOnAnotherProcessCount() {
    QTemporaryDir dir;
    const QString p = project(dir);
    const QString store = dir.filePath("runs.sqlite");
    const QStringList common{"--sync-bn", "on", "--threads", "1", "--max-steps", "600"};
    QProcess* first = start(QStringList{"train", p, "--devices", "cpu:2", "--epochs", "50",
                                        "--checkpoint-dir", dir.filePath("ckpt")} +
                                common,
                            store);
    QByteArray seen;
    QElapsedTimer t;
    t.start();
    while (!seen.contains("epoch 1/50") && t.elapsed() < 120000 && first->waitForReadyRead(1000))
      seen += first->readAllStandardOutput();
    ::kill(static_cast<pid_t>(first->processId()), SIGINT);
    const Finished stopped = finish(first);
    QVERIFY2(stopped.code == 130 && stopped.out.contains("continue with --resume-run 1"),
             qPrintable(QString::fromUtf8(seen) + stopped.out + stopped.err));

    const QString rendezvous = QStringLiteral("127.0.0.1:%1").arg(free_port());
    std::vector<QProcess*> nodes;
    for (int n = 0; n < 2; ++n)
      nodes.push_back(
          start(QStringList{"train", "--resume-run", "1", "--devices", "cpu:1", "--nodes", "2",
                            "--node-rank", QString::number(n), "--rendezvous", rendezvous} +
                    common,
                store));
    const Finished n0 = finish(nodes[0]), n1 = finish(nodes[1]);
    QVERIFY2(n0.code == 0, qPrintable(n0.out + n0.err));
    QVERIFY2(n1.code == 0, qPrintable(n1.out + n1.err));
    QVERIFY2(n0.out.contains("continuing run 1 in " + store), qPrintable(n0.out));
    QVERIFY2(n1.out.contains("resuming run 1 (stopped)"), qPrintable(n1.out));

    const Finished whole = finish(
        start(QStringList{"train", p, "--devices", "cpu:2", "--epochs", "50"} + common, store));
    QVERIFY2(whole.code == 0, qPrintable(whole.out + whole.err));

    const tr::store::RunStore s(store.toStdString());
    QCOMPARE(s.list_runs().size(), size_t{2});
    QCOMPARE(s.run(1).summary.status, tr::store::RunStatus::Finished);
    const auto resumed = s.step_curve(1), uninterrupted = s.step_curve(2);
    QCOMPARE(resumed.size(), size_t{600});
    QCOMPARE(uninterrupted.size(), size_t{600});
    for (size_t i = 0; i < resumed.size(); ++i)
      if (resumed[i].step != uninterrupted[i].step || resumed[i].loss != uninterrupted[i].loss)
        QFAIL(qPrintable(QStringLiteral("step %1: loss %2 resumed, %3 never stopped")
                             .arg(i)
                             .arg(resumed[i].loss, 0, 'g', 17)
                             .arg(uninterrupted[i].loss, 0, 'g', 17)));
  }

  // Where the store is not shared, the other nodes cannot find the run.
  void aResumeOnANodeWithoutTheStoreSaysWhy() {
    QTemporaryDir dir;
    const Finished f = finish(start({"train", "--resume-run", "1", "--devices", "cpu:1", "--nodes",
                                     "2", "--node-rank", "1", "--rendezvous", "127.0.0.1:1"},
                                    dir.filePath("elsewhere.sqlite")));
    QCOMPARE(f.code, 2);
    QVERIFY2(
        f.err.contains("node 1 finds no run store at '" + dir.filePath("elsewhere.sqlite") + "'"),
        qPrintable(f.err));
    QVERIFY(!QFile::exists(dir.filePath("elsewhere.sqlite")));
  }

  void aKilledProcessFailsTheOtherNamingIt() {
    QTemporaryDir dir;
    LongRun run(dir);
    QVERIFY2(run.seen.contains("epoch 1/50"), run.seen.constData());
    ::kill(static_cast<pid_t>(run.n1->processId()), SIGKILL);
    QElapsedTimer t;
    t.start();
    const Finished f0 = run.finish_node(0);
    const double waited = static_cast<double>(t.elapsed()) / 1000.0;
    run.finish_node(1);
    QVERIFY2(f0.code != 0, qPrintable(f0.out));
    QVERIFY2(f0.err.contains("node 1"), qPrintable(f0.err));
    QVERIFY2(waited < 30.0, qPrintable(QString::number(waited)));
  }
};

QTEST_GUILESS_MAIN(TestMultiProcess)
#include "test_multi_process.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli onnx export` (include/renaissance/onnx_export.h): models
// trained for a few steps are exported, and tests/onnx/check_export.py runs
// onnx.checker and compares the ONNX graph's outputs with the checkpoint's
// model computed in our own layout (skipped where python3-onnx is missing).
// The three Fashion-MNIST projects and a fixture with every layer type the
// export writes; then what a wrong checkpoint or path gets.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/onnx_export.h>
#include <renaissance/project_io.h>
#include "cli_process.h"
#include "usage_error.h"
using namespace tr;
using tr::test::usage_error;

namespace {

using Run = tr::test::ProcessRun;
using tr::test::run_process;

Run cli(const QStringList& args) {
  return run_process(QStringLiteral(TR_CLI), args);
}

QString project_path(const QString& name) {
  return name.endsWith(QStringLiteral(".json"))
             ? name
             : QStringLiteral(TR_PROJECTS_DIR "/%1.json").arg(name);
}

onnx::ModelProto read_model(const QString& path) {
  onnx::ModelProto m;
  std::ifstream in(path.toStdString(), std::ios::binary);
  if (!m.ParseFromIstream(&in)) qFatal("cannot parse %s", qPrintable(path));
  return m;
}

const onnx::TensorProto* initializer(const onnx::ModelProto& m, const std::string& name) {
  for (const onnx::TensorProto& t : m.graph().initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

}  // namespace

class TestOnnxExport : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString at(const QString& name) const { return dir_.filePath(name); }

  // Trains `project` for a few steps and returns its checkpoint.
  QString trained(const QString& project, const QString& name) {
    return tr::test::train_checkpoint(QStringLiteral(TR_CLI), project_path(project), at(name));
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void exportsComputeTheCheckpointsModel_data() {
    QTest::addColumn<QString>("project");
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QStringList>("check");
    QTest::newRow("lenet-fashion") << "lenet-fashion" << QStringList{} << QStringList{};
    QTest::newRow("cnn-bn-fashion softmax")
        << "cnn-bn-fashion" << QStringList{"--softmax"} << QStringList{"--softmax"};
    QTest::newRow("resnet8-fashion") << "resnet8-fashion" << QStringList{} << QStringList{};
    const QString zoo = QStringLiteral(TR_TEST_DATA "/onnx/zoo.json");
    QTest::newRow("zoo, EMA weights") << zoo << QStringList{} << QStringList{"--ema"};
    QTest::newRow("zoo, trained weights")
        << zoo << QStringList{"--master-weights"} << QStringList{};
    QTest::newRow("attention block") << QStringLiteral(TR_TEST_DATA "/onnx/attention.json")
                                     << QStringList{} << QStringList{"--ema"};
    QTest::newRow("tokens and images")
        << QStringLiteral(TR_TEST_DATA "/onnx/hybrid.json") << QStringList{} << QStringList{};
  }

  void exportsComputeTheCheckpointsModel() {
    QFETCH(QString, project);
    QFETCH(QStringList, flags);
    QFETCH(QStringList, check);
    const QString tag = QString::fromLatin1(QTest::currentDataTag()).replace(' ', '_').remove(',');
    const QString ckpt = trained(project, tag);
    const QString out = at(tag + ".onnx");
    const Run r =
        cli(QStringList{"onnx", "export", project_path(project), "--checkpoint", ckpt, "-o", out} +
            flags);
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.startsWith(QStringLiteral("wrote ") + out), qPrintable(r.out));
    // What other tools rely on, read back with ONNX's own definitions.
    const onnx::ModelProto m = read_model(out);
    QCOMPARE(m.opset_import(0).version(), int64_t{13});
    QCOMPARE(m.graph().input_size(), 1);
    const auto& dims = m.graph().input(0).type().tensor_type().shape().dim();
    QCOMPARE(dims.size(), 4);
    QCOMPARE(dims[0].dim_param(), std::string("N"));
    const Project p = load_project(project_path(project).toStdString());
    QCOMPARE(dims[1].dim_value(), p.dataset.channels);  // NCHW at the interface
    QCOMPARE(m.graph().output(0).name(),
             std::string(flags.contains("--softmax") ? "probabilities" : "logits"));
    for (const onnx::NodeProto& n : m.graph().node())
      QVERIFY2(n.op_type() != "BatchNormalization" || n.attribute_size() > 0, n.name().c_str());
    // The numbers, against the checkpoint (tests/onnx/check_export.py).
    const Run c = run_process(QStringLiteral(TR_PYTHON),
                              QStringList{QStringLiteral(TR_ONNX_CHECK), out, ckpt} + check);
    if (c.code == 77) QSKIP(qPrintable(c.out.trimmed()));
    QVERIFY2(c.code == 0, qPrintable(c.out));
    qInfo("%s", qPrintable(c.out.trimmed().replace('\n', "; ")));
  }

  // The kernel [O, KH, KW, I] becomes [O, I, KH, KW]; the first Linear after
  // a spatial tensor has its columns in CHW order.
  void weightsAreLaidOutForNchw() {
    const QString ckpt = trained(QStringLiteral("lenet-fashion"), QStringLiteral("layout"));
    const Checkpoint c = read_checkpoint(ckpt.toStdString());
    const Project p = load_project(project_path(QStringLiteral("lenet-fashion")).toStdString());
    const std::string out = at(QStringLiteral("layout.onnx")).toStdString();
    const OnnxExportSummary s = export_onnx(p, c, out);
    QCOMPARE(s.classes, int64_t{10});
    QCOMPARE(s.parameters, int64_t{61706});
    QVERIFY(!s.used_ema);
    const onnx::ModelProto m = read_model(QString::fromStdString(out));
    auto values = [&](const std::string& name) {
      const onnx::TensorProto* t = initializer(m, name);
      if (!t) qFatal("no initializer %s", name.c_str());
      std::vector<float> v(t->raw_data().size() / sizeof(float));
      std::memcpy(v.data(), t->raw_data().data(), t->raw_data().size());
      return v;
    };
    auto ours = [&](const std::string& name) {
      for (const CheckpointTensor& t : c.tensors)
        if (t.name == name && t.region.rfind("W_", 0) == 0) return t;
      qFatal("no tensor %s", name.c_str());
    };
    // conv2: [16, 5, 5, 6] -> [16, 6, 5, 5]
    const CheckpointTensor k = ours("conv2.weight");
    const std::vector<float> oihw = values("conv2.weight");
    for (int64_t o : {0, 7, 15})
      for (int64_t i : {0, 5})
        for (int64_t y : {0, 4})
          for (int64_t x : {1, 3})
            QCOMPARE(oihw[static_cast<size_t>(((o * 6 + i) * 5 + y) * 5 + x)],
                     k.values[static_cast<size_t>(((o * 5 + y) * 5 + x) * 6 + i)]);
    // fc1 reads conv2's pooled 5x5x16 output: column (y, x, c) moves to (c, y, x).
    const CheckpointTensor f = ours("fc1.weight");
    const std::vector<float> chw = values("fc1.weight");
    for (int64_t o : {0, 119})
      for (int64_t y : {0, 4})
        for (int64_t x : {0, 2})
          for (int64_t ch : {0, 15})
            QCOMPARE(chw[static_cast<size_t>(o * 400 + (ch * 5 + y) * 5 + x)],
                     f.values[static_cast<size_t>(o * 400 + (y * 5 + x) * 16 + ch)]);
    // The metadata says how to feed it.
    std::string mean;
    for (const onnx::StringStringEntryProto& e : m.metadata_props())
      if (e.key() == "renaissance.mean") mean = e.value();
    QCOMPARE(mean, std::string("0.286041"));
  }

  void wrongCheckpointsAndPathsAreRefused() {
    const QString ckpt = trained(QStringLiteral("lenet-fashion"), QStringLiteral("refused"));
    const Project p = load_project(project_path(QStringLiteral("lenet-fashion")).toStdString());
    Checkpoint c = read_checkpoint(ckpt.toStdString());
    const std::string out = at(QStringLiteral("refused.onnx")).toStdString();
    Checkpoint missing = c;
    std::erase_if(missing.tensors,
                  [](const CheckpointTensor& t) { return t.name == "fc1.weight"; });
    QString why = usage_error([&] { export_onnx(p, missing, out); });
    QVERIFY2(why.contains(QStringLiteral("the checkpoint has no tensor 'fc1.weight'")),
             qPrintable(why));
    Checkpoint resized = c;
    for (CheckpointTensor& t : resized.tensors)
      if (t.name == "conv1.bias") t.values.pop_back();
    why = usage_error([&] { export_onnx(p, resized, out); });
    QVERIFY2(why.contains(QStringLiteral("the checkpoint's 'conv1.bias' holds 5 values but the "
                                         "project's layer needs 6")),
             qPrintable(why));
    QVERIFY(!QFile::exists(QString::fromStdString(out)));  // nothing half-written
    why = usage_error([&] { export_onnx(p, c, "/nonexistent-folder/x.onnx"); });
    QVERIFY2(why.contains(QStringLiteral("/nonexistent-folder/x.onnx: cannot be written")),
             qPrintable(why));
    // Through the CLI: a checkpoint of another project, and missing options.
    const QString other = trained(QStringLiteral("cnn-bn-fashion"), QStringLiteral("other"));
    Run r = cli({"onnx", "export", project_path(QStringLiteral("lenet-fashion")), "--checkpoint",
                 other, "-o", QString::fromStdString(out)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("is a checkpoint of 'cnn-bn-fashion', not of "
                                           "'lenet-fashion'")),
             qPrintable(r.out));
    r = cli({"onnx", "export", project_path(QStringLiteral("lenet-fashion")), "-o",
             QString::fromStdString(out)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("needs --checkpoint")), qPrintable(r.out));
    r = cli({"onnx", "frobnicate"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral(
                 "unknown onnx subcommand 'frobnicate'; expected export, import or ops")),
             qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TestOnnxExport)
#include "test_onnx_export.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// `renaissance-cli onnx import` (include/renaissance/onnx_import.h): models
// PyTorch exports match PyTorch's logits (tests/onnx/check_import.py, skipped
// where torch is missing); our own trained models exported and imported
// again predict bit for bit what they did; and what the importer cannot take
// is refused naming the file, the node and what is wrong.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

#include <renaissance/checkpoint.h>
#include <renaissance/dataset_kinds.h>
#include <renaissance/error.h>
#include <renaissance/onnx_import.h>
#include <renaissance/project_io.h>
#include "cli_process.h"
#include "png_files.h"
#include "usage_error.h"
using namespace tr;
using Run = tr::test::ProcessRun;
using tr::test::run_process;
using tr::test::usage_error;

namespace {

Run cli(const QStringList& args) {
  return run_process(QStringLiteral(TR_CLI), args);
}

QString project_path(const QString& name) {
  return name.endsWith(QStringLiteral(".json"))
             ? name
             : QStringLiteral(TR_PROJECTS_DIR "/%1.json").arg(name);
}

// A small model written with ONNX's own definitions, to be broken one way
// per case: image [1, 1, 4, 4] -> Conv (2, 3x3, pads 1) -> Relu -> Flatten
// -> Gemm (3) -> "logits".
class TinyModel {
 public:
  TinyModel() {
    m_.set_ir_version(7);
    m_.set_producer_name("test");
    onnx::OperatorSetIdProto* o = m_.add_opset_import();
    o->set_version(13);
    onnx::GraphProto& g = *m_.mutable_graph();
    g.set_name("tiny");
    input(g.add_input(), "image", {1, 1, 4, 4});
    input(g.add_output(), "logits", {1, 3});
    weights("conv.weight", {2, 1, 3, 3});
    weights("conv.bias", {2});
    weights("fc.weight", {3, 32});
    weights("fc.bias", {3});
    onnx::NodeProto& c = node("Conv", "conv", {"image", "conv.weight", "conv.bias"}, "c");
    ints(c, "kernel_shape", {3, 3});
    ints(c, "pads", {1, 1, 1, 1});
    node("Relu", "relu", {"c"}, "r");
    integer(node("Flatten", "flatten", {"r"}, "f"), "axis", 1);
    integer(node("Gemm", "fc", {"f", "fc.weight", "fc.bias"}, "logits"), "transB", 1);
  }

  // The Relu becomes a LayerNorm over the conv's channels as PyTorch writes
  // it below opset 17, with `scales` values of scale and of shift.
  void layer_norm(int64_t scales) {
    onnx::GraphProto& g = graph();
    for (int k = 0; k < g.node_size(); ++k)
      if (g.node(k).name() == "relu") g.mutable_node()->DeleteSubrange(k, 1);
    weights("ln.weight", {scales, 1, 1});
    weights("ln.bias", {scales, 1, 1});
    weights("ln.two", {});
    initializer("ln.two").set_float_data(0, 2.0f);
    weights("ln.eps", {});
    initializer("ln.eps").set_float_data(0, 1e-5f);
    ints(node("ReduceMean", "ln/mean", {"c"}, "m"), "axes", {1});
    node("Sub", "ln/sub", {"c", "m"}, "d");
    node("Pow", "ln/pow", {"d", "ln.two"}, "d2");
    ints(node("ReduceMean", "ln/var", {"d2"}, "v"), "axes", {1});
    node("Add", "ln/add", {"v", "ln.eps"}, "ve");
    node("Sqrt", "ln/sqrt", {"ve"}, "s");
    node("Div", "ln/div", {"d", "s"}, "n");
    node("Mul", "ln/mul", {"n", "ln.weight"}, "ns");
    node("Add", "ln/shift", {"ns", "ln.bias"}, "r");
    // Topological order: the norm's nodes before the Flatten and the Gemm.
    for (const char* later : {"flatten", "fc"})
      for (int k = 0; k < g.node_size(); ++k)
        if (g.node(k).name() == later) {
          onnx::NodeProto moved = g.node(k);
          g.mutable_node()->DeleteSubrange(k, 1);
          *g.add_node() = moved;
          break;
        }
  }

  onnx::ModelProto& model() { return m_; }
  onnx::GraphProto& graph() { return *m_.mutable_graph(); }
  onnx::NodeProto& find(const std::string& name) {
    for (onnx::NodeProto& n : *graph().mutable_node())
      if (n.name() == name) return n;
    qFatal("no node %s", name.c_str());
  }
  onnx::TensorProto& initializer(const std::string& name) {
    for (onnx::TensorProto& t : *graph().mutable_initializer())
      if (t.name() == name) return t;
    qFatal("no initializer %s", name.c_str());
  }
  onnx::NodeProto& node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& in, const std::string& out) {
    onnx::NodeProto* n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : in) n->add_input(i);
    n->add_output(out);
    return *n;
  }
  // Values 0.01 * (1 + index mod 7), different enough to tell apart.
  onnx::TensorProto& weights(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.01f * static_cast<float>(1 + i % 7));
    return *t;
  }
  static void ints(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void integer(onnx::NodeProto& n, const char* name, int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void input(onnx::ValueInfoProto* v, const std::string& name,
                    const std::vector<int64_t>& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    m_.SerializeToOstream(&out);
  }

 private:
  onnx::ModelProto m_;
};

}  // namespace

class TestOnnxImport : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString at(const QString& name) const { return dir_.filePath(name); }

  // Trains `project` for a few steps and returns its checkpoint.
  QString trained(const QString& project, const QString& name) {
    return tr::test::train_checkpoint(QStringLiteral(TR_CLI), project_path(project), at(name));
  }

  // Each image's logits, as predict --json --logits prints them.
  std::vector<std::vector<float>> logits(const QString& project, const QString& ckpt,
                                         const QStringList& images) {
    const Run r =
        cli(QStringList{"predict", project, "--checkpoint", ckpt, "--json", "--logits"} + images);
    if (r.code != 0) qFatal("predict failed: %s", qPrintable(r.out));
    std::vector<std::vector<float>> out;
    for (const nlohmann::json& o : nlohmann::json::parse(r.out.toStdString()))
      out.push_back(o.at("logits").get<std::vector<float>>());
    return out;
  }

  // `mutate` breaks the tiny model; importing it must fail with `expected`.
  void refused(const char* tag, const std::function<void(TinyModel&)>& mutate,
               const QString& expected) {
    TinyModel t;
    mutate(t);
    const std::string path = at(QString::fromLatin1(tag) + ".onnx").toStdString();
    t.save(path);
    const QString why = usage_error([&] { import_onnx(path); });
    QVERIFY2(why.startsWith(QString::fromStdString(path + ": ")) && why.contains(expected),
             qPrintable(QString::fromLatin1(tag) + ": " + why));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // A Linear that reads the image input itself: ONNX flattens it first.
    std::ofstream(at(QStringLiteral("linear-on-input.json")).toStdString()) << R"({
      "format": 1, "name": "linear-on-input",
      "model": {
        "nodes": [
          {"id": "input", "type": "Input", "params": {"height": 3, "width": 2, "channels": 3}},
          {"id": "fc", "type": "Linear", "params": {"out_features": 3}},
          {"id": "loss", "type": "SoftmaxCrossEntropy"}
        ],
        "edges": [{"from": "input", "to": "fc"}, {"from": "fc", "to": "loss"}]
      },
      "dataset": {"kind": "synthetic", "height": 3, "width": 2, "channels": 3, "classes": 3,
                  "train_size": 32, "val_size": 16, "mean": [0.5, 0.25, 0.75],
                  "std": [0.5, 0.125, 0.25]},
      "training": {"optimizer": {"type": "sgd", "lr": 0.1}, "epochs": 1, "global_batch": 8,
                   "devices": "cpu:1", "precision": "fp32", "seed": 4}
    })";
  }

  void pytorchModelsGivePyTorchsLogits() {
    const Run r =
        run_process(QStringLiteral(TR_PYTHON), {QStringLiteral(TR_ONNX_IMPORT_CHECK), "--cli",
                                                TR_CLI, "--work", at(QStringLiteral("pytorch"))});
    if (r.code == 77) QSKIP(qPrintable(r.out.trimmed()));
    QVERIFY2(r.code == 0, qPrintable(r.out));
    for (const QString& line : r.out.split('\n'))
      if (line.startsWith(QStringLiteral("ok "))) qInfo("%s", qPrintable(line));
    QCOMPARE(r.out.count(QStringLiteral("\nok ")) + r.out.startsWith(QStringLiteral("ok ")), 7);
  }

  void exportedAndImportedPredictsTheSame_data() {
    QTest::addColumn<QString>("project");
    QTest::newRow("lenet-fashion") << "lenet-fashion";
    QTest::newRow("cnn-bn-fashion") << "cnn-bn-fashion";
    QTest::newRow("resnet8-fashion") << "resnet8-fashion";
    QTest::newRow("zoo") << QStringLiteral(TR_TEST_DATA "/onnx/zoo.json");
    QTest::newRow("linear-on-input") << at(QStringLiteral("linear-on-input.json"));
    QTest::newRow("vit-tiny-fashion") << "vit-tiny-fashion";
    // Both TokenPools, a bias-less TokenLinear, LayerNorm's eps.
    QTest::newRow("attention block") << QStringLiteral(TR_TEST_DATA "/onnx/attention.json");
    QTest::newRow("tokens and images") << QStringLiteral(TR_TEST_DATA "/onnx/hybrid.json");
  }

  void exportedAndImportedPredictsTheSame() {
    QFETCH(QString, project);
    const QString tag = QString::fromLatin1(QTest::currentDataTag());
    const QString ckpt = trained(project, tag);
    const QString onnx = at(tag + ".onnx");
    Run r = cli({"onnx", "export", project_path(project), "--checkpoint", ckpt, "-o", onnx,
                 "--master-weights"});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    const QString imported = at(tag + "-imported.json");
    const QString weights = at(tag + "-imported.ckpt");
    r = cli({"onnx", "import", onnx, "-o", imported, "--checkpoint-out", weights});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("recorded in the file")), qPrintable(r.out));

    const Project before = load_project(project_path(project).toStdString());
    const Project after = load_project(imported.toStdString());
    QCOMPARE(after.dataset.kind, before.dataset.kind == DatasetKind::Synthetic
                                     ? DatasetKind::ImageFolder
                                     : before.dataset.kind);
    QCOMPARE(after.dataset.mean, before.dataset.mean);
    QCOMPARE(after.dataset.std, before.dataset.std);
    // The layers with weights keep their names (the weights are named after them).
    for (const LayerNode& n : before.model.nodes)
      if (layer_has_weights(n.type)) {
        const int i = after.model.find(n.id);
        QVERIFY2(i >= 0, n.id.c_str());
        QCOMPARE(after.model.nodes[static_cast<size_t>(i)].params, n.params);
      }

    QStringList images;
    const Shape s{1, before.dataset.height, before.dataset.width, before.dataset.channels};
    for (int i = 0; i < 5; ++i) {
      images << at(QStringLiteral("%1-%2.png").arg(tag).arg(i));
      tr::test::write_png(images.back().toStdString(), static_cast<int>(s.w), static_cast<int>(s.h),
                          static_cast<int>(s.c),
                          tr::test::pattern(static_cast<int>(s.w), static_cast<int>(s.h),
                                            static_cast<int>(s.c), 37 * i));
    }
    const auto ours = logits(project_path(project), ckpt, images);
    const auto back = logits(imported, weights, images);
    QCOMPARE(back.size(), size_t{5});
    for (size_t i = 0; i < ours.size(); ++i)
      QVERIFY2(back[i] == ours[i], qPrintable(QStringLiteral("image %1").arg(i)));
  }

  // An image-folder model keeps its class names, their order and its
  // probabilities through export and import: the names travel in the file's
  // metadata, not guessed from the shape.
  void anImageFolderModelKeepsItsClassNames() {
    const QStringList classes{"ankle-boot", "bag", "coat"};
    QStringList images;
    for (const char* split : {"train", "val"})
      for (int k = 0; k < classes.size(); ++k)
        for (int i = 0; i < 4; ++i) {
          const QString folder = at(QStringLiteral("folders/%1/%2").arg(split, classes[k]));
          QVERIFY(QDir().mkpath(folder));
          const QString png = QStringLiteral("%1/%2.png").arg(folder).arg(i);
          tr::test::write_png(png.toStdString(), 8, 8, 1,
                              tr::test::pattern(8, 8, 1, 60 * k + 11 * i));
          if (std::string_view(split) == "val" && i == 0) images << png;
        }
    const QString project = at(QStringLiteral("folder-model.json"));
    // Built as JSON, not written out as text: moc does not read raw strings
    // broken by << into their parts.
    const auto edge = [](const char* from, const char* to) {
      return nlohmann::json{{"from", from}, {"to", to}};
    };
    const nlohmann::json file = {
        {"format", 1},
        {"name", "folder-model"},
        {"model",
         {{"nodes",
           {{{"id", "input"},
             {"type", "Input"},
             {"params", {{"height", 8}, {"width", 8}, {"channels", 1}}}},
            {{"id", "conv"},
             {"type", "Conv2d"},
             {"params", {{"out_channels", 4}, {"kernel", 3}, {"padding", 1}}}},
            {{"id", "relu"}, {"type", "ReLU"}},
            {{"id", "flatten"}, {"type", "Flatten"}},
            {{"id", "fc"}, {"type", "Linear"}, {"params", {{"out_features", 3}}}},
            {{"id", "loss"}, {"type", "SoftmaxCrossEntropy"}}}},
          {"edges",
           {edge("input", "conv"), edge("conv", "relu"), edge("relu", "flatten"),
            edge("flatten", "fc"), edge("fc", "loss")}}}},
        {"dataset",
         {{"kind", "image-folder"},
          {"train_dir", at(QStringLiteral("folders/train")).toStdString()},
          {"val_dir", at(QStringLiteral("folders/val")).toStdString()},
          {"height", 8},
          {"width", 8},
          {"channels", 1},
          {"classes", 3}}},
        {"training", {{"epochs", 1}, {"global_batch", 4}}}};
    std::ofstream(project.toStdString()) << file.dump(2);
    const QString ckpt = trained(project, QStringLiteral("folder-ckpt"));
    const QString onnx = at(QStringLiteral("folder-model.onnx"));
    Run r = cli({"onnx", "export", project, "--checkpoint", ckpt, "-o", onnx, "--master-weights"});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("classes: ankle-boot, bag, coat, recorded in the file")),
             qPrintable(r.out));
    const QString imported = at(QStringLiteral("folder-imported.json"));
    const QString weights = at(QStringLiteral("folder-imported.ckpt"));
    r = cli({"onnx", "import", onnx, "-o", imported, "--checkpoint-out", weights});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    QVERIFY2(r.out.contains(QStringLiteral("the class names recorded in the file")),
             qPrintable(r.out));
    QVERIFY2(!r.out.contains(QStringLiteral("Fashion")), qPrintable(r.out));
    const Project back = load_project(imported.toStdString());
    QCOMPARE(back.dataset.kind, DatasetKind::ImageFolder);
    QCOMPARE(back.dataset.class_names, (std::vector<std::string>{"ankle-boot", "bag", "coat"}));

    // The same names, in the same order, with the same probabilities.
    const auto predicted = [&](const QString& p, const QString& c) {
      const Run run =
          cli(QStringList{"predict", p, "--checkpoint", c, "--json", "--top", "3"} + images);
      if (run.code != 0) qFatal("predict failed: %s", qPrintable(run.out));
      return nlohmann::json::parse(run.out.toStdString());
    };
    const nlohmann::json ours = predicted(project, ckpt), theirs = predicted(imported, weights);
    QCOMPARE(ours.size(), size_t(3));
    for (size_t i = 0; i < ours.size(); ++i) {
      QCOMPARE(theirs[i].at("top3"), ours[i].at("top3"));
      const std::string best = ours[i].at("top3")[0].at("class").get<std::string>();
      QVERIFY2(classes.contains(QString::fromStdString(best)), best.c_str());
    }
  }

  // A model whose file does not name its classes (as PyTorch writes them) is
  // not given Fashion-MNIST's names because its input and outputs have
  // Fashion-MNIST's shape: the classes are "class 0" ... and the user is told.
  void unnamedClassesAreNotGuessedFromTheShape() {
    const QString ckpt = trained(QStringLiteral("lenet-fashion"), QStringLiteral("unnamed"));
    const QString onnx = at(QStringLiteral("unnamed.onnx"));
    Run r = cli({"onnx", "export", project_path(QStringLiteral("lenet-fashion")), "--checkpoint",
                 ckpt, "-o", onnx});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    onnx::ModelProto m;
    {
      std::ifstream in(onnx.toStdString(), std::ios::binary);
      QVERIFY(m.ParseFromIstream(&in));
    }
    QVERIFY(m.metadata_props_size() > 0);
    m.clear_metadata_props();
    {
      std::ofstream out(onnx.toStdString(), std::ios::binary | std::ios::trunc);
      QVERIFY(m.SerializeToOstream(&out));
    }
    const OnnxImportResult res = import_onnx(onnx.toStdString());
    QCOMPARE(res.project.dataset.kind, DatasetKind::ImageFolder);
    QVERIFY(res.project.dataset.class_names.empty());
    QCOMPARE(dataset_class_names(res.project.dataset).front(), std::string("class 0"));
    QCOMPARE(dataset_class_names(res.project.dataset).back(), std::string("class 9"));
    std::string notes;
    for (const std::string& n : res.notes) notes += n + "\n";
    QVERIFY2(notes.find("does not say what the classes are called") != std::string::npos,
             notes.c_str());
    QVERIFY2(notes.find("if it learnt Fashion-MNIST") != std::string::npos, notes.c_str());
    QVERIFY2(notes.find("none recorded") != std::string::npos, notes.c_str());

    // With its metadata, the same file is Fashion-MNIST again, with its names.
    r = cli({"onnx", "export", project_path(QStringLiteral("lenet-fashion")), "--checkpoint", ckpt,
             "-o", onnx});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    const OnnxImportResult named = import_onnx(onnx.toStdString());
    QCOMPARE(named.project.dataset.kind, DatasetKind::FashionMnist);
    QCOMPARE(dataset_class_names(named.project.dataset).front(), std::string("T-shirt/top"));
  }

  void importedModelsFineTune() {
    TinyModel t;
    const std::string path = at(QStringLiteral("tiny.onnx")).toStdString();
    t.save(path);
    const OnnxImportResult r = import_onnx(path, {"tiny", {0.5}, {0.25}});
    QCOMPARE(r.project.dataset.kind, DatasetKind::ImageFolder);
    QCOMPARE(r.project.dataset.classes, int64_t{3});
    QCOMPARE(r.project.dataset.mean, std::vector<double>{0.5});
    QCOMPARE(r.parameters, int64_t{2 * 9 + 2 + 3 * 32 + 3});
    QCOMPARE(r.project.model.nodes.size(), size_t{6});
    QCOMPARE(r.project.model.find("conv"), 1);  // named after its weight
    // fc reads the 4x4x2 image: its column (c, y, x) comes from ONNX's c*16 + y*4 + x.
    const onnx::TensorProto& fc = t.initializer("fc.weight");
    for (const CheckpointTensor& c : r.checkpoint.tensors)
      if (c.name == "fc.weight")
        for (int64_t o : {0, 2})
          for (int64_t y : {0, 3})
            for (int64_t x : {1, 2})
              for (int64_t ch : {0, 1})
                QCOMPARE(c.values[static_cast<size_t>(o * 32 + (y * 4 + x) * 2 + ch)],
                         fc.float_data(static_cast<int>(o * 32 + ch * 16 + y * 4 + x)));
    // A real image folder makes it train from the imported weights.
    for (const char* cls : {"a", "b", "c"})
      for (const char* split : {"train", "val"})
        for (int i = 0; i < 4; ++i) {
          const QString file = at(QStringLiteral("tinydata/%1/%2/%3.png").arg(split, cls).arg(i));
          QDir().mkpath(QFileInfo(file).path());
          tr::test::write_png(file.toStdString(), 4, 4, 1, tr::test::pattern(4, 4, 1, i * 11));
        }
    // Saved before its folders are chosen, it loads, and training asks for them.
    const std::string unset = at(QStringLiteral("tiny-unset.json")).toStdString();
    save_project(r.project, unset);
    QVERIFY(load_project(unset).dataset.path.empty());
    const Run asks = cli({"train", QString::fromStdString(unset), "--no-store"});
    QCOMPARE(asks.code, 2);
    QVERIFY2(asks.out.contains(QStringLiteral("no training folder is set")), qPrintable(asks.out));
    Project p = r.project;
    p.dataset.path = at(QStringLiteral("tinydata/train")).toStdString();
    p.dataset.val_path = at(QStringLiteral("tinydata/val")).toStdString();
    p.training.global_batch = 4;
    p.training.epochs = 1;
    const std::string project = at(QStringLiteral("tiny.json")).toStdString();
    save_project(p, project);
    const std::string ckpt = at(QStringLiteral("tiny.ckpt")).toStdString();
    write_checkpoint(r.checkpoint, ckpt);
    const Run train = cli({"train", QString::fromStdString(project), "--init-from",
                           QString::fromStdString(ckpt), "--no-store"});
    QVERIFY2(train.code == 0, qPrintable(train.out));
    QVERIFY2(
        train.out.contains(QStringLiteral(": 4 weight and statistics tensors taken, none fresh")),
        qPrintable(train.out));
  }

  // PyTorch's decomposed LayerNorm (opsets 13 to 16) is one LayerNorm
  // layer with its eps, scale and shift.
  void aDecomposedLayerNormIsOneLayer() {
    TinyModel t;
    t.layer_norm(2);
    const std::string path = at(QStringLiteral("layer-norm.onnx")).toStdString();
    t.save(path);
    const OnnxImportResult r = import_onnx(path);
    const int ln = r.project.model.find("ln");
    QVERIFY(ln >= 0);
    const LayerNode& n = r.project.model.nodes[static_cast<size_t>(ln)];
    QCOMPARE(n.type, LayerType::LayerNorm);
    QCOMPARE(n.params.eps, 1e-5);
    QCOMPARE(r.project.model.nodes.size(), size_t{6});  // input, conv, ln, flatten, fc, loss
    int found = 0;
    for (const CheckpointTensor& c : r.checkpoint.tensors)
      if (c.name == "ln.weight" || c.name == "ln.bias") {
        QCOMPARE(c.values, (std::vector<float>{0.01f, 0.02f}));
        ++found;
      }
    QVERIFY(found >= 2);
  }

  void unsupportedModelsAreRefused() {
    refused(
        "unknown-op", [](TinyModel& t) { t.find("relu").set_op_type("Selu"); },
        QStringLiteral("node 'relu' (Selu): the workbench has no layer for the ONNX "
                       "operator 'Selu' (it imports Add, AveragePool"));
    refused(
        "lone mul", [](TinyModel& t) { t.find("relu").set_op_type("Mul"); },
        QStringLiteral("node 'relu' (Mul): is not part of a GELU (x / sqrt 2, Erf, + 1, times x, "
                       "times 0.5, as PyTorch writes it), a SiLU (x times Sigmoid(x)) or a "
                       "LayerNorm over the channels (ReduceMean, Sub, Pow 2, ReduceMean, Add "
                       "eps, Sqrt, Div, Mul by the scale, Add the shift, as PyTorch writes it "
                       "below opset 17); the importer takes 'Mul' only there"));
    refused(
        "lone sub", [](TinyModel& t) { t.find("relu").set_op_type("Sub"); },
        QStringLiteral("node 'relu' (Sub): is not part of a LayerNorm over the channels"));
    refused(
        "layer norm scales", [](TinyModel& t) { t.layer_norm(3); },
        QStringLiteral("node 'ln/mul' (Mul): scales 3 channels of a layer normalisation whose "
                       "input has 2"));
    refused(
        "layer norm over width",
        [](TinyModel& t) {
          t.layer_norm(2);
          t.find("ln/mean").mutable_attribute(0)->set_ints(0, 3);
        },
        QStringLiteral("node 'ln/mean' (ReduceMean): averages over the axes [3]"));
    // A Div with no inputs at all: the GELU matcher looks at its first input before anything
    // checks that it has one (a fuzzing finding).
    refused(
        "div without inputs",
        [](TinyModel& t) {
          t.find("relu").set_op_type("Div");
          t.find("relu").clear_input();
        },
        QStringLiteral("node 'relu' (Div): is not part of a GELU"));
    refused(
        "dilation",
        [](TinyModel& t) {
          TinyModel::ints(t.find("conv"), "dilations", {2, 2});
        },
        QStringLiteral("node 'conv' (Conv): dilates by [2, 2]"));
    refused(
        "asymmetric", [](TinyModel& t) { t.find("conv").mutable_attribute(1)->set_ints(2, 0); },
        QStringLiteral("node 'conv' (Conv): pads [1, 1, 0, 1]"));
    refused(
        "attribute", [](TinyModel& t) { TinyModel::integer(t.find("conv"), "frobs", 1); },
        QStringLiteral("has the attribute 'frobs', which the importer does not read for Conv"));
    refused(
        "channels", [](TinyModel& t) { t.initializer("conv.weight").set_dims(1, 3); },
        QStringLiteral("holds 18 values where its shape needs 54"));
    refused(
        "kernel channels",
        [](TinyModel& t) {
          onnx::TensorProto& w = t.initializer("conv.weight");
          w.set_dims(1, 3);
          for (int i = 0; i < 36; ++i) w.add_float_data(0.5f);
        },
        QStringLiteral("node 'conv' (Conv): its kernel takes 3 input channels (3 per group, "
                       "1 groups) but its input has 1"));
    refused(
        "features",
        [](TinyModel& t) {
          onnx::TensorProto& w = t.initializer("fc.weight");
          w.set_dims(1, 30);
          w.mutable_float_data()->Truncate(90);
        },
        QStringLiteral("node 'fc' (Gemm): takes 30 features but its input has 32"));
    refused(
        "kernel from a node", [](TinyModel& t) { t.find("conv").set_input(1, "r"); },
        QStringLiteral("node 'conv' (Conv): takes its kernel 'r' from another node"));
    refused(
        "two inputs",
        [](TinyModel& t) {
          TinyModel::input(t.graph().add_input(), "mask", {1, 1, 4, 4});
        },
        QStringLiteral("the model takes 2 inputs ('image', 'mask')"));
    refused(
        "flat input",
        [](TinyModel& t) {
          t.graph()
              .mutable_input(0)
              ->mutable_type()
              ->mutable_tensor_type()
              ->mutable_shape()
              ->mutable_dim()
              ->DeleteSubrange(2, 2);
        },
        QStringLiteral("its input 'image' has the shape [1, 1]; expected an image"));
    refused(
        "float16",
        [](TinyModel& t) { t.initializer("fc.bias").set_data_type(onnx::TensorProto::FLOAT16); },
        QStringLiteral("the stored tensor 'fc.bias' holds float16 values"));
    refused(
        "external",
        [](TinyModel& t) {
          t.initializer("fc.bias").set_data_location(onnx::TensorProto::EXTERNAL);
        },
        QStringLiteral("'fc.bias' keeps its values in a file of its own"));
    refused(
        "softmax inside", [](TinyModel& t) { t.find("relu").set_op_type("Softmax"); },
        QStringLiteral("node 'relu' (Softmax): is not the model's last operator"));
    refused(
        "ceil",
        [](TinyModel& t) {
          t.find("relu").set_op_type("MaxPool");
          TinyModel::ints(t.find("relu"), "kernel_shape", {1, 1});
          TinyModel::integer(t.find("relu"), "ceil_mode", 1);
        },
        QStringLiteral("node 'relu' (MaxPool): rounds its output size up"));
    refused(
        "clip",
        [](TinyModel& t) {
          t.find("relu").set_op_type("Clip");
          t.weights("lo", {});
          t.weights("hi", {});
          t.find("relu").add_input("lo");
          t.find("relu").add_input("hi");
        },
        QStringLiteral("node 'relu' (Clip): clips to [0.010000, 0.010000]; the workbench has "
                       "ReLU6 only"));
    refused(
        "training BN",
        [](TinyModel& t) {
          onnx::NodeProto& n = t.find("relu");
          n.set_op_type("BatchNormalization");
          for (const char* part : {"s", "b", "m", "v"}) {
            t.weights(part, {2});
            n.add_input(part);
          }
          TinyModel::integer(n, "training_mode", 1);
        },
        QStringLiteral("node 'relu' (BatchNormalization): is in training mode"));
    refused(
        "two outputs",
        [](TinyModel& t) {
          TinyModel::input(t.graph().add_output(), "r", {1, 2, 4, 4});
        },
        QStringLiteral("the model has 2 outputs"));
    refused(
        "image output", [](TinyModel& t) { t.graph().mutable_output(0)->set_name("r"); },
        QStringLiteral("the model's output is an image of 4x4 with 2 channels"));
    refused(
        "old opset", [](TinyModel& t) { t.model().mutable_opset_import(0)->set_version(6); },
        QStringLiteral("it uses opset 6; the importer reads opsets 7 to 21"));
    // Sizes beyond the project loader's limits are refused where they are
    // read (shape inference never computes with them), and whatever else the
    // loader refuses is named in the ONNX file.
    refused(
        "huge padding",
        [](TinyModel& t) {
          onnx::AttributeProto& pads = *t.find("conv").mutable_attribute(1);
          for (int i = 0; i < 4; ++i) pads.set_ints(i, int64_t{1} << 62);
        },
        QStringLiteral(
            "node 'conv' (Conv): has the padding 4611686018427387904x4611686018427387904; "
            "the Conv2d layer takes 0 to 65536 in each direction"));
    refused(
        "huge input",
        [](TinyModel& t) {
          t.graph()
              .mutable_input(0)
              ->mutable_type()
              ->mutable_tensor_type()
              ->mutable_shape()
              ->mutable_dim(2)
              ->set_dim_value(100000);
        },
        QStringLiteral(
            "its input 'image' has the height 100000; the Input layer takes 1 to 65536"));
    refused(
        "mean not a number",
        [](TinyModel& t) {
          for (const auto& [key, value] :
               {std::pair{"renaissance.mean", "nan"}, std::pair{"renaissance.std", "1"}}) {
            onnx::StringStringEntryProto* e = t.model().add_metadata_props();
            e->set_key(key);
            e->set_value(value);
          }
        },
        QStringLiteral("the imported model does not make a project that loads:\n  the graph: "
                       "field 'dataset.mean[0]': expected a number"));
  }

  // Our export's attention on tokens, changed where an attention that is not
  // ours would differ: each refused at the node, saying what would fit.
  void variantsOfOurAttentionAreRefused() {
    const QString project = QStringLiteral(TR_TEST_DATA "/onnx/attention.json");
    const QString onnx = at(QStringLiteral("attention-variants.onnx"));
    const Run r = cli(
        {"onnx", "export", project, "--checkpoint", trained(project, "attention-v"), "-o", onnx});
    QVERIFY2(r.code == 0, qPrintable(r.out));
    onnx::ModelProto exported;
    {
      std::ifstream f(onnx.toStdString(), std::ios::binary);
      QVERIFY(exported.ParseFromIstream(&f));
    }
    const auto variant = [&](const char* tag, const std::function<void(onnx::GraphProto&)>& change,
                             const QString& expected) {
      onnx::ModelProto m = exported;
      change(*m.mutable_graph());
      const std::string path = at(QString::fromLatin1(tag) + ".onnx").toStdString();
      {
        std::ofstream f(path, std::ios::binary);
        QVERIFY(m.SerializeToOstream(&f));
      }
      const QString why = usage_error([&] { import_onnx(path); });
      QVERIFY2(why.startsWith(QString::fromStdString(path + ": ")) && why.contains(expected),
               qPrintable(QString::fromLatin1(tag) + ": " + why));
    };
    const auto node = [](onnx::GraphProto& g, const std::string& name) -> onnx::NodeProto& {
      for (onnx::NodeProto& n : *g.mutable_node())
        if (n.name() == name) return n;
      qFatal("no node %s", name.c_str());
    };
    variant(
        "attention-scale",
        [](onnx::GraphProto& g) {
          for (onnx::TensorProto& t : *g.mutable_initializer())
            if (t.name() == "attn/scale") {
              const float half = 0.5f;
              t.set_raw_data(&half, sizeof half);
            }
        },
        QStringLiteral("node 'attn/scaled' (Mul): multiplies the scores by 0.5; attention "
                       "multiplies them by 1 / sqrt(head size) (0.353553 for heads of 8)"));
    variant(
        "attention-softmax-axis",
        [&](onnx::GraphProto& g) { node(g, "attn/probabilities").mutable_attribute(0)->set_i(2); },
        QStringLiteral("node 'attn/probabilities' (Softmax): normalises over axis 2; attention's "
                       "softmax is over the keys (the last axis, -1)"));
    variant(
        "attention-split",
        [](onnx::GraphProto& g) {
          for (onnx::TensorProto& t : *g.mutable_initializer())
            if (t.name() == "attn/qkv_sizes") {
              t.set_int64_data(0, 2);
              t.set_int64_data(2, 4);
            }
        },
        QStringLiteral("node 'attn/qkv' (Split): does not split the 9 heads into three of 3 "
                       "(queries, keys, values) on axis 1"));
  }

  void dropoutAndItsRatioAreKept() {
    TinyModel t;
    onnx::NodeProto& d = t.find("relu");
    d.set_op_type("Dropout");
    t.weights("ratio", {});  // 0.01
    d.add_input("ratio");
    const std::string path = at(QStringLiteral("dropout.onnx")).toStdString();
    t.save(path);
    const OnnxImportResult r = import_onnx(path);
    const LayerNode& n = r.project.model.nodes[2];
    QCOMPARE(n.type, LayerType::Dropout);
    QCOMPARE(n.params.p, double{0.01f});
  }

  void badFilesAndOptionsAreRefused() {
    QString why =
        usage_error([&] { import_onnx(at(QStringLiteral("absent.onnx")).toStdString()); });
    QVERIFY2(why.endsWith(QStringLiteral("absent.onnx: no such file")), qPrintable(why));
    const std::string text = at(QStringLiteral("text.onnx")).toStdString();
    std::ofstream(text) << "this is not a model\n";
    why = usage_error([&] { import_onnx(text); });
    QVERIFY2(why.contains(QStringLiteral("text.onnx: not an ONNX model")), qPrintable(why));
    // Cut in the middle of its weights.
    TinyModel t;
    const std::string whole = at(QStringLiteral("whole.onnx")).toStdString();
    t.save(whole);
    std::string bytes;
    {
      std::ifstream in(whole, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string cut = at(QStringLiteral("cut.onnx")).toStdString();
    std::ofstream(cut, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    why = usage_error([&] { import_onnx(cut); });
    QVERIFY2(why.contains(QStringLiteral("cut.onnx: not an ONNX model")), qPrintable(why));

    Run r = cli({"onnx", "import", QString::fromStdString(whole)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("onnx import needs -o PROJECT.json")),
             qPrintable(r.out));
    r = cli({"onnx", "import", QString::fromStdString(whole), "-o", at(QStringLiteral("w.json")),
             "--mean", "0.5"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("give --mean and --std together")), qPrintable(r.out));
    r = cli({"onnx", "import", QString::fromStdString(whole), "-o", at(QStringLiteral("w.json")),
             "--mean", "0.5,x", "--std", "1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("--mean takes numbers separated by commas")),
             qPrintable(r.out));
    r = cli({"onnx", "import", QString::fromStdString(whole), "-o", at(QStringLiteral("w.json")),
             "--mean", "0.5,0.5", "--std", "1,1"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("the mean has 2 values but the model's input has 1 "
                                           "channels")),
             qPrintable(r.out));
    QVERIFY(!QFile::exists(at(QStringLiteral("w.json"))));  // nothing written
    r = cli({"onnx", "ops"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains(QStringLiteral("BatchNormalization")), qPrintable(r.out));
    r = cli({"predict", project_path(QStringLiteral("lenet-fashion")), "--checkpoint", "x.ckpt",
             "--logits", "a.png"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.out.contains(QStringLiteral("--logits adds the raw outputs to --json's list")),
             qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TestOnnxImport)
#include "test_onnx_import.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the project loader and writer: defaults, round trips, the broken-file corpus.
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <renaissance/error.h>
#include <renaissance/project.h>
#include <renaissance/project_io.h>

using namespace tr;

namespace {

const std::string kBrokenDir = std::string(TR_TEST_DATA) + "/broken";

const char* const kMinimal = R"({
  "format": 1,
  "name": "minimal",
  "model": {
    "nodes": [
      {"id": "input", "type": "Input", "params": {"height": 28, "width": 28, "channels": 1}},
      {"id": "flatten", "type": "Flatten"},
      {"id": "fc", "type": "Linear", "params": {"out_features": 10}},
      {"id": "loss", "type": "SoftmaxCrossEntropy"}
    ],
    "edges": [
      {"from": "input", "to": "flatten"},
      {"from": "flatten", "to": "fc"},
      {"from": "fc", "to": "loss"}
    ]
  }
})";

// Field-by-field comparison; returns the first difference, empty when equal.
std::string differ(const Project& a, const Project& b) {
  std::ostringstream d;
#define TR_CMP(expr)            \
  do {                          \
    if (!(a.expr == b.expr)) {  \
      d << #expr << " differs"; \
      return d.str();           \
    }                           \
  } while (0)
  TR_CMP(format);
  TR_CMP(name);
  TR_CMP(description);
  TR_CMP(model.nodes.size());
  for (size_t i = 0; i < a.model.nodes.size(); ++i) {
    const LayerNode& x = a.model.nodes[i];
    const LayerNode& y = b.model.nodes[i];
    const LayerParams& p = x.params;
    const LayerParams& q = y.params;
    bool same = x.id == y.id && x.type == y.type && x.x == y.x && x.y == y.y &&
                x.has_position == y.has_position && p.height == q.height && p.width == q.width &&
                p.channels == q.channels && p.out_channels == q.out_channels &&
                p.kernel_h == q.kernel_h && p.kernel_w == q.kernel_w && p.stride_h == q.stride_h &&
                p.stride_w == q.stride_w && p.pad_h == q.pad_h && p.pad_w == q.pad_w &&
                p.bias == q.bias && p.eps == q.eps && p.momentum == q.momentum && p.p == q.p;
    if (!same) return "node " + std::to_string(i) + " (" + x.id + ") differs";
  }
  TR_CMP(model.edges.size());
  for (size_t i = 0; i < a.model.edges.size(); ++i) {
    const Edge& x = a.model.edges[i];
    const Edge& y = b.model.edges[i];
    if (x.from != y.from || x.to != y.to || x.from_port != y.from_port || x.to_port != y.to_port)
      return "edge " + std::to_string(i) + " differs";
  }
  TR_CMP(dataset.kind);
  TR_CMP(dataset.path);
  TR_CMP(dataset.height);
  TR_CMP(dataset.width);
  TR_CMP(dataset.channels);
  TR_CMP(dataset.classes);
  TR_CMP(dataset.train_size);
  TR_CMP(dataset.val_size);
  TR_CMP(dataset.mean);
  TR_CMP(dataset.std);
  TR_CMP(dataset.random_crop_padding);
  TR_CMP(dataset.random_flip);
  TR_CMP(training.optimizer.kind);
  TR_CMP(training.optimizer.lr);
  TR_CMP(training.optimizer.momentum);
  TR_CMP(training.optimizer.weight_decay);
  TR_CMP(training.optimizer.nesterov);
  TR_CMP(training.optimizer.beta1);
  TR_CMP(training.optimizer.beta2);
  TR_CMP(training.optimizer.adam_eps);
  TR_CMP(training.optimizer.trust_coefficient);
  TR_CMP(training.schedule.kind);
  TR_CMP(training.schedule.warmup_epochs);
  TR_CMP(training.schedule.min_lr);
  TR_CMP(training.schedule.step_epochs);
  TR_CMP(training.schedule.gamma);
  TR_CMP(training.epochs);
  TR_CMP(training.global_batch);
  TR_CMP(training.devices.kind);
  TR_CMP(training.devices.ids);
  TR_CMP(training.precision);
  TR_CMP(training.seed);
  TR_CMP(training.ema);
  TR_CMP(training.ema_decay);
  TR_CMP(variants.size());
  for (size_t i = 0; i < a.variants.size(); ++i) {
    const VariantSpec& x = a.variants[i];
    const VariantSpec& y = b.variants[i];
    if (x.name != y.name || x.kind != y.kind || x.batch != y.batch || x.height != y.height ||
        x.width != y.width)
      return "variant " + std::to_string(i) + " differs";
  }
#undef TR_CMP
  return {};
}

// A project that uses every layer type and sets every field away from its default.
Project hand_built() {
  Project p;
  p.name = "hand \"built\"";
  p.description = "every field set; unicode: \u00e9\u4e2d, newline:\nend";
  auto add = [&](const std::string& id, LayerType t) -> LayerParams& {
    LayerNode n;
    n.id = id;
    n.type = t;
    p.model.nodes.push_back(n);
    return p.model.nodes.back().params;
  };
  LayerParams& in = add("in.put-1", LayerType::Input);
  in.height = 32;
  in.width = 48;
  in.channels = 3;
  p.model.nodes.back().x = 12.5;
  p.model.nodes.back().y = -3.25;
  p.model.nodes.back().has_position = true;
  LayerParams& conv = add("conv", LayerType::Conv2d);
  conv.out_channels = 16;
  conv.kernel_h = 3;
  conv.kernel_w = 5;
  conv.stride_h = 2;
  conv.stride_w = 2;
  conv.pad_h = 1;
  conv.pad_w = 2;
  conv.bias = false;
  LayerParams& bn = add("bn", LayerType::BatchNorm2d);
  bn.eps = 1e-3;
  bn.momentum = 0.30000000000000004;
  add("relu", LayerType::ReLU);
  add("tanh", LayerType::Tanh);
  add("silu", LayerType::SiLU);
  LayerParams& mp = add("maxpool", LayerType::MaxPool2d);
  mp.kernel_h = mp.kernel_w = 3;
  mp.stride_h = mp.stride_w = 1;
  mp.pad_h = mp.pad_w = 1;
  LayerParams& ap = add("avgpool", LayerType::AvgPool2d);
  ap.kernel_h = 2;
  ap.kernel_w = 1;
  ap.stride_h = 2;
  ap.stride_w = 1;
  add("add", LayerType::Add);
  add("gap", LayerType::GlobalAvgPool);
  LayerParams& drop = add("drop", LayerType::Dropout);
  drop.p = 0.125;
  add("flatten", LayerType::Flatten);
  LayerParams& fc = add("fc", LayerType::Linear);
  fc.out_channels = 7;
  fc.bias = false;
  add("loss", LayerType::SoftmaxCrossEntropy);
  auto edge = [&](const std::string& from, const std::string& to, int to_port = 0) {
    p.model.edges.push_back(Edge{p.model.find(from), 0, p.model.find(to), to_port});
  };
  edge("in.put-1", "conv");
  edge("conv", "bn");
  edge("bn", "relu");
  edge("relu", "tanh");
  edge("tanh", "silu");
  edge("silu", "maxpool");
  edge("maxpool", "avgpool");
  edge("avgpool", "add");
  edge("bn", "add", 1);
  edge("add", "gap");
  edge("gap", "drop");
  edge("drop", "flatten");
  edge("flatten", "fc");
  edge("fc", "loss");

  DatasetSpec& d = p.dataset;
  d.kind = DatasetKind::Synthetic;
  d.height = 32;
  d.width = 48;
  d.channels = 3;
  d.classes = 7;
  d.train_size = 1000;
  d.val_size = 100;
  d.mean = {0.5, 0.25, 0.1};
  d.std = {0.2, 0.3, 1.0 / 3.0};
  d.random_crop_padding = 4;
  d.random_flip = true;

  TrainingSpec& t = p.training;
  t.optimizer.kind = OptimizerKind::Adam;
  t.optimizer.lr = 0.1 + 0.2;
  t.optimizer.momentum = 0.5;
  t.optimizer.weight_decay = 0;
  t.optimizer.nesterov = true;
  t.optimizer.beta1 = 0.8;
  t.optimizer.beta2 = 0.99;
  t.optimizer.adam_eps = 1e-7;
  t.optimizer.trust_coefficient = 0.02;
  t.schedule.kind = ScheduleKind::Step;
  t.schedule.warmup_epochs = 1.5;
  t.schedule.min_lr = 1e-6;
  t.schedule.step_epochs = 30;
  t.schedule.gamma = 0.5;
  t.epochs = 90;
  t.global_batch = 256;
  t.devices.kind = DeviceKind::CUDA;
  t.devices.ids = {0, 2};
  t.precision = Precision::AMP;
  t.seed = 18446744073709551615ull;
  t.ema = true;
  t.ema_decay = 0.9999;

  p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                {"train-big", VariantKind::LastBatch, 12, 0, 0},
                {"val-hires", VariantKind::Validation, 50, 64, 96}};
  return p;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The expected report for one broken file: some diagnostic must have this
// field (exactly) and node label (substring), carry `line` when it is
// non-zero, and contain every listed substring in its message.
struct BrokenCase {
  const char* file;
  const char* field;
  const char* node;
  int line;
  std::vector<const char*> message;
};

const std::vector<BrokenCase>& broken_cases() {
  // clang-format off
  static const std::vector<BrokenCase> cases = {
      {"syntax_error.json", "", "", 4, {"invalid JSON", "expected '}'"}},
      {"truncated.json", "", "", 8, {"invalid JSON", "unexpected end of input"}},
      {"empty.json", "", "", 1, {"invalid JSON", "unexpected end of input"}},
      {"binary_garbage.json", "", "", 1, {"invalid JSON", "\\x89"}},
      {"trailing_garbage.json", "", "", 6, {"invalid JSON", "expected end of input"}},
      {"comment.json", "", "", 3, {"invalid JSON", "no comments"}},
      {"number_overflow.json", "", "", 5, {"number overflow", "1e400"}},
      {"deep_nesting.json", "", "", 4, {"nested deeper than 64"}},
      {"not_an_object.json", "", "", 0, {"expected a JSON object", "got"}},
      {"duplicate_key.json", "model.nodes[0].params.height", "", 0, {"duplicate key \"height\""}},
      {"format_newer.json", "format", "", 0, {"format 2 is newer than this version reads (1)"}},
      {"format_missing.json", "format", "", 0, {"missing"}},
      {"name_missing.json", "name", "", 0, {"missing", "string"}},
      {"model_missing.json", "model", "", 0, {"missing"}},
      {"unknown_layer_type.json", "type", "'conv1'", 0,
       {"unknown layer type \"Conv3d\"", "expected one of Input, Conv2d",
        "did you mean \"Conv2d\""}},
      {"unknown_param_key.json", "params.kernal", "'conv1' (Conv2d)", 0,
       {"unknown key \"kernal\"; did you mean \"kernel\"?"}},
      {"unknown_top_key.json", "trainig", "", 0, {"unknown key \"trainig\"", "\"training\""}},
      {"relu_with_params.json", "params.inplace", "'relu1' (ReLU)", 0,
       {"unknown key \"inplace\"", "ReLU takes no parameters"}},
      {"kernel_string.json", "params.kernel", "'conv1' (Conv2d)", 0,
       {"expected a positive integer", "got \"five\""}},
      {"kernel_float.json", "params.kernel", "'conv1' (Conv2d)", 0, {"got 2.5"}},
      {"kernel_pair_bad.json", "params.kernel[1]", "'conv1' (Conv2d)", 0, {"got 0"}},
      {"stride_negative.json", "params.stride", "'conv1' (Conv2d)", 0,
       {"expected a positive integer", "got -2"}},
      {"out_channels_bool.json", "params.out_channels", "'conv1' (Conv2d)", 0, {"got true"}},
      {"huge_number.json", "params.out_features", "'fc' (Linear)", 0, {"at most 1048576", "1e+30"}},
      {"params_not_object.json", "params", "'fc' (Linear)", 0, {"expected an object"}},
      {"input_missing_param.json", "params.channels", "'input' (Input)", 0, {"missing"}},
      {"dropout_p_one.json", "params.p", "'drop' (Dropout)", 0, {"[0, 1)", "got 1"}},
      {"pos_bad.json", "pos", "'fc' (Linear)", 0, {"pair [x, y]"}},
      {"duplicate_node_id.json", "id", "'conv1' (ReLU)", 0,
       {"duplicate node id \"conv1\"", "model.nodes[1]"}},
      {"bad_node_id.json", "model.nodes[2].id", "", 0, {"invalid node id \"relu 1\""}},
      {"edge_missing_node.json", "model.edges[1].to", "", 0, {"no node with id \"conv9\""}},
      {"port_out_of_range.json", "model.edges[3].to_port", "'add' (Add)", 0, {"0..1", "got 2"}},
      {"concat_port_beyond_inputs.json", "model.edges[4].to_port", "'cat' (Concat)", 0,
       {"0..2", "got 3", "raise its \"inputs\""}},
      {"concat_too_many_inputs.json", "params.inputs", "'cat' (Concat)", 0, {"2..8", "got 9"}},
      {"two_edges_one_port.json", "model.edges[3].to", "'add' (Add)", 0,
       {"'relu1' (ReLU)", "'conv1' (Conv2d)", "exactly one edge"}},
      {"loss_as_source.json", "model.edges[5].from_port", "'loss' (SoftmaxCrossEntropy)", 0,
       {"no output ports"}},
      {"bad_devices.json", "training.devices", "", 0, {"gpu:0", "expected cpu"}},
      // Three ranks are fine; 64 samples a step do not split over them.
      {"cpu3.json", "training.global_batch", "", 0, {"64", "3 ranks"}},
      {"cuda_duplicate.json", "training.devices", "", 0, {"device 1 is listed twice"}},
      {"batch_not_divisible.json", "training.global_batch", "", 0, {"100", "8 ranks"}},
      {"bad_precision.json", "training.precision", "", 0,
       {"unknown precision \"fp16\"", "fp32, amp, bf16"}},
      {"bad_optimizer.json", "training.optimizer.type", "", 0,
       {"unknown optimizer \"rmsprop\"", "sgd, adam, lars"}},
      {"lr_zero.json", "training.optimizer.lr", "", 0, {"> 0", "got 0"}},
      {"epochs_not_integer.json", "training.epochs", "", 0, {"positive integer", "got 2.5"}},
      {"seed_negative.json", "training.seed", "", 0, {"non-negative integer", "got -1"}},
      {"ema_decay_one.json", "training.ema.decay", "", 0, {"(0, 1)"}},
      {"validation_without_batch.json", "variants[1].batch", "", 0, {"missing", "validation"}},
      {"two_train_variants.json", "variants[1].kind", "", 0,
       {"second train variant", "variants[0]"}},
      {"no_train_variant.json", "variants", "", 0, {"exactly one", "train"}},
      {"duplicate_variant_name.json", "variants[1].name", "", 0, {"duplicate variant name"}},
      // The shape is also an image folder's to say (it was "only for synthetic").
      {"fashion_with_height.json", "dataset.height", "", 0,
       {"only for image-folder and synthetic datasets"}},
      {"cifar_with_path.json", "dataset.path", "", 0,
       {"not a key of cifar-10 datasets; CIFAR-10's folder is \"dataset.dir\""}},
      {"fashion_with_dir.json", "dataset.dir", "", 0,
       {"not a key of fashion-mnist datasets; Fashion-MNIST's folder is \"dataset.path\""}},
      {"cifar_with_classes.json", "dataset.classes", "", 0,
       {"only for image-folder and synthetic datasets; CIFAR-100 is always 32x32x3 with 100 "
        "classes, 50000 training and 10000 validation images"}},
      {"std_wrong_count.json", "dataset.std", "", 0, {"expected 3 values", "got 2"}},
      {"std_zero.json", "dataset.std[0]", "", 0, {"> 0"}},
      {"dataset_kind_bad.json", "dataset.kind", "", 0, {"unknown dataset kind \"cifar10\""}},
      {"several_problems.json", "training.precision", "", 0, {"fp8"}},
  };
  // clang-format on
  return cases;
}

bool matches(const Diagnostic& d, const BrokenCase& c) {
  if (d.field != c.field) return false;
  if (std::string(c.node).empty() ? !d.node.empty() : d.node.find(c.node) == std::string::npos)
    return false;
  if (c.line > 0 && d.line != c.line) return false;
  for (const char* m : c.message)
    if (d.message.find(m) == std::string::npos) return false;
  return true;
}

}  // namespace

class TestProjectLoader : public QObject {
  Q_OBJECT

 private slots:
  void labelsAndNames() {
    LayerNode n;
    n.id = "conv1";
    n.type = LayerType::Conv2d;
    QCOMPARE(n.label(), std::string("'conv1' (Conv2d)"));
    ModelGraph g;
    g.nodes = {n};
    QCOMPARE(g.find("conv1"), 0);
    QCOMPARE(g.find("conv2"), -1);
    QCOMPARE(variant_kind_name(VariantKind::LastBatch), std::string_view("last_batch"));
    QCOMPARE(optimizer_name(OptimizerKind::LARS), std::string_view("lars"));
    QCOMPARE(schedule_name(ScheduleKind::Step), std::string_view("step"));
    QCOMPARE(precision_name(Precision::AMP), std::string_view("amp"));
    QCOMPARE(precision_name(Precision::BF16), std::string_view("bf16"));
  }

  void deviceSets_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("ok");
    QTest::addColumn<QString>("canonical");  // DeviceSet::str(), or an error substring
    QTest::addColumn<int>("world");
    QTest::newRow("cpu") << "cpu" << true << "cpu:1" << 1;
    QTest::newRow("cpu:2") << "cpu:2" << true << "cpu:2" << 2;
    QTest::newRow("cpu:64") << "cpu:64" << true << "cpu:64" << 64;
    QTest::newRow("cuda:0") << "cuda:0" << true << "cuda:0" << 1;
    QTest::newRow("cuda:0-3") << "cuda:0-3" << true << "cuda:0-3" << 4;
    QTest::newRow("cuda:0,1") << "cuda:0,1" << true << "cuda:0-1" << 2;
    QTest::newRow("cuda:0,2") << "cuda:0,2" << true << "cuda:0,2" << 2;
    QTest::newRow("cuda:3,2") << "cuda:3,2" << true << "cuda:3,2" << 2;
    QTest::newRow("cuda:0-1,4-5") << "cuda:0-1,4-5" << true << "cuda:0,1,4,5" << 4;
    QTest::newRow("cpu:3") << "cpu:3" << true << "cpu:3" << 3;
    QTest::newRow("cpu:0") << "cpu:0" << false << "at least one rank" << 0;
    QTest::newRow("cpu:128") << "cpu:128" << false << "at most 64" << 0;
    QTest::newRow("cpu:-1") << "cpu:-1" << false << "expected cpu:N" << 0;
    QTest::newRow("cpu:99999999999") << "cpu:99999999999" << false << "expected cpu:N" << 0;
    QTest::newRow("cuda:0-2") << "cuda:0-2" << true << "cuda:0-2" << 3;
    QTest::newRow("cuda:64") << "cuda:64" << false << "0 to 63" << 0;
    QTest::newRow("cuda:3-0") << "cuda:3-0" << false << "backwards" << 0;
    QTest::newRow("cuda:0,0") << "cuda:0,0" << false << "listed twice" << 0;
    QTest::newRow("cuda:") << "cuda:" << false << "expected cuda:IDS" << 0;
    QTest::newRow("cuda:0,") << "cuda:0," << false << "expected cuda:IDS" << 0;
    QTest::newRow("cuda") << "cuda" << false << "expected cpu" << 0;
    QTest::newRow("gpu:0") << "gpu:0" << false << "expected cpu" << 0;
    QTest::newRow("empty") << "" << false << "expected cpu" << 0;
    QTest::newRow("space") << "cpu: 2" << false << "expected cpu:N" << 0;
  }

  void deviceSets() {
    QFETCH(QString, text);
    QFETCH(bool, ok);
    QFETCH(QString, canonical);
    QFETCH(int, world);
    DeviceSet d;
    std::string error;
    bool parsed = parse_device_set(text.toStdString(), d, error);
    QCOMPARE(parsed, ok);
    if (ok) {
      QCOMPARE(QString::fromStdString(d.str()), canonical);
      QCOMPARE(d.world_size(), world);
      DeviceSet again;
      QVERIFY(parse_device_set(d.str(), again, error));
      QVERIFY(again.ids == d.ids && again.kind == d.kind);
    } else {
      QVERIFY2(error.find(canonical.toStdString()) != std::string::npos, error.c_str());
    }
  }

  void minimalProjectDefaults() {
    Project p = parse_project(kMinimal, "minimal.json");
    QCOMPARE(p.name, std::string("minimal"));
    QCOMPARE(p.format, 1);
    QVERIFY(p.description.empty());
    QVERIFY(p.source_path.empty());
    QCOMPARE(p.model.nodes.size(), size_t{4});
    QCOMPARE(p.model.edges.size(), size_t{3});
    QCOMPARE(p.model.edges[1].from, 1);
    QCOMPARE(p.model.edges[1].to, 2);
    QCOMPARE(p.model.nodes[0].params.height, int64_t{28});
    QCOMPARE(p.model.nodes[2].params.out_channels, int64_t{10});
    QVERIFY(p.model.nodes[2].params.bias);
    QVERIFY(!p.model.nodes[0].has_position);

    const DatasetSpec d;
    QCOMPARE(p.dataset.kind, DatasetKind::FashionMnist);
    QCOMPARE(p.dataset.train_size, int64_t{60000});
    QCOMPARE(p.dataset.val_size, int64_t{10000});
    QCOMPARE(p.dataset.classes, int64_t{10});
    QVERIFY(p.dataset.mean == d.mean && p.dataset.std == d.std);

    const TrainingSpec t;
    QCOMPARE(p.training.optimizer.kind, OptimizerKind::SGD);
    QCOMPARE(p.training.optimizer.lr, t.optimizer.lr);
    QCOMPARE(p.training.schedule.kind, ScheduleKind::Cosine);
    QCOMPARE(p.training.epochs, t.epochs);
    QCOMPARE(p.training.global_batch, int64_t{128});
    QCOMPARE(p.training.devices.str(), std::string("cpu:1"));
    QCOMPARE(p.training.precision, Precision::FP32);
    QCOMPARE(p.training.seed, uint64_t{42});
    QVERIFY(!p.training.ema);

    QCOMPARE(p.variants.size(), size_t{3});
    QCOMPARE(p.variants[0].kind, VariantKind::Train);
    QCOMPARE(p.variants[0].batch, int64_t{0});
    QCOMPARE(p.variants[1].kind, VariantKind::LastBatch);
    QCOMPARE(p.variants[2].kind, VariantKind::Validation);
    // The training batch (128) would leave a partial validation batch of
    // Fashion-MNIST's 10,000 images: the largest batch below it that divides.
    QCOMPARE(p.variants[2].batch, int64_t{125});
  }

  void defaultValidationBatchIsPerDevice() {
    std::string text = kMinimal;
    text.insert(text.rfind('}'), R"(, "training": {"global_batch": 256, "devices": "cuda:0-3"})");
    Project p = parse_project(text, "t.json");
    QCOMPARE(p.variants.size(), size_t{3});
    // 64 per device would need 10,000 to divide by 256; 50 x 4 = 200 does.
    QCOMPARE(p.variants[2].batch, int64_t{50});
    // A validation set of 6,400 takes the per-device training batch as it is.
    text.insert(text.rfind('}'), R"(, "dataset": {"kind": "synthetic", "val_size": 6400})");
    QCOMPARE(parse_project(text, "t.json").variants[2].batch, int64_t{64});
  }

  // CIFAR's shape, classes, sizes and usual statistics come with its kind;
  // its folder is "dir", written back as it was read.
  void cifarKindsFixTheirShapeAndStatistics() {
    std::string text = kMinimal;
    const std::string fashion_input = R"("height": 28, "width": 28, "channels": 1)";
    text.replace(text.find(fashion_input), fashion_input.size(),
                 R"("height": 32, "width": 32, "channels": 3)");
    text.insert(text.rfind('}'), R"(, "dataset": {"kind": "cifar-10", "dir": "/data/cifar-10"})");
    Project p = parse_project(text, "c.json");
    QCOMPARE(p.dataset.kind, DatasetKind::Cifar10);
    QCOMPARE(p.dataset.path, std::string("/data/cifar-10"));
    QCOMPARE(p.dataset.height, int64_t{32});
    QCOMPARE(p.dataset.channels, int64_t{3});
    QCOMPARE(p.dataset.classes, int64_t{10});
    QCOMPARE(p.dataset.train_size, int64_t{50000});
    QCOMPARE(p.dataset.mean, (std::vector<double>{0.4914, 0.4822, 0.4465}));
    const std::string out = project_to_json(p);
    QVERIFY2(out.find(R"("kind": "cifar-10")") != std::string::npos &&
                 out.find(R"("dir": "/data/cifar-10")") != std::string::npos &&
                 out.find(R"("path")") == std::string::npos,
             out.c_str());
    QCOMPARE(project_to_json(parse_project(out, "c.json")), out);
    text.replace(text.find("\"cifar-10\""), 10, "\"cifar-100\"");
    p = parse_project(text, "c.json");
    QCOMPARE(p.dataset.kind, DatasetKind::Cifar100);
    QCOMPARE(p.dataset.classes, int64_t{100});
  }

  void explicitVariantsMayOmitValidation() {
    std::string text = kMinimal;
    text.insert(text.rfind('}'), R"(, "variants": [{"name": "t", "kind": "train", "batch": 32}])");
    Project p = parse_project(text, "t.json");
    QCOMPARE(p.variants.size(), size_t{1});
    QCOMPARE(p.variants[0].batch, int64_t{32});
  }

  void paramDefaultsAndForms() {
    const char* text = R"({"format": 1, "name": "x", "model": {"nodes": [
      {"id": "pool", "type": "MaxPool2d", "params": {"kernel": [3, 2]}},
      {"id": "conv", "type": "Conv2d", "params": {"out_channels": 4.0, "kernel": 3}},
      {"id": "bn", "type": "BatchNorm2d", "params": {}},
      {"id": "p", "type": "Dropout", "pos": [1.5, -2]}]}})";
    Project p = parse_project(text, "x.json");
    const LayerParams& pool = p.model.nodes[0].params;
    QCOMPARE(pool.kernel_h, int64_t{3});
    QCOMPARE(pool.kernel_w, int64_t{2});
    QCOMPARE(pool.stride_h, int64_t{3});  // stride defaults to the kernel
    QCOMPARE(pool.stride_w, int64_t{2});
    QCOMPARE(pool.pad_h, int64_t{0});
    const LayerParams& conv = p.model.nodes[1].params;
    QCOMPARE(conv.out_channels, int64_t{4});  // an integral float is an integer
    QCOMPARE(conv.stride_h, int64_t{1});
    QCOMPARE(p.model.nodes[2].params.eps, 1e-5);
    QCOMPARE(p.model.nodes[3].params.p, 0.5);
    QVERIFY(p.model.nodes[3].has_position);
    QCOMPARE(p.model.nodes[3].x, 1.5);
    QCOMPARE(p.model.nodes[3].y, -2.0);
  }

  void syntheticStatisticsDefaultPerChannel() {
    std::string text = kMinimal;
    text.insert(text.rfind('}'),
                R"(, "dataset": {"kind": "synthetic", "channels": 3, "classes": 5})");
    Project p = parse_project(text, "s.json");
    QCOMPARE(p.dataset.kind, DatasetKind::Synthetic);
    QCOMPARE(p.dataset.mean.size(), size_t{3});
    QCOMPARE(p.dataset.std.size(), size_t{3});
    QCOMPARE(p.dataset.classes, int64_t{5});
  }

  void roundTripHandBuilt() {
    Project p = hand_built();
    std::string text = project_to_json(p);
    Project back;
    try {
      back = parse_project(text, "hand.json");
    } catch (const ProjectError& e) {
      QFAIL((std::string(e.what()) + "\n" + text).c_str());
    }
    std::string d = differ(p, back);
    QVERIFY2(d.empty(), (d + "\n" + text).c_str());
    QCOMPARE(project_to_json(back), text);  // stable output
    QVERIFY(text.find("\"kernel\": [3, 5]") != std::string::npos);
    QVERIFY(text.find("\"stride\": 2") != std::string::npos);
    QVERIFY(text.find("  \"format\": 1,\n") != std::string::npos);
  }

  void roundTripProjects() {
    QDir dir(TR_PROJECTS_DIR);
    const QStringList files = dir.entryList({"*.json"}, QDir::Files, QDir::Name);
    if (files.isEmpty()) QSKIP("no projects/*.json yet");
    for (const QString& name : files) {
      std::string path = dir.filePath(name).toStdString();
      Project p;
      try {
        p = load_project(path);
      } catch (const std::exception& e) {
        QFAIL(e.what());
      }
      QCOMPARE(p.source_path, path);
      Project back = parse_project(project_to_json(p), path);
      std::string d = differ(p, back);
      QVERIFY2(d.empty(), (path + ": " + d).c_str());
    }
  }

  void brokenCorpus_data() {
    QTest::addColumn<int>("index");
    const auto& cases = broken_cases();
    for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].file) << static_cast<int>(i);
  }

  void brokenCorpus() {
    QFETCH(int, index);
    const BrokenCase& c = broken_cases()[static_cast<size_t>(index)];
    const std::string path = kBrokenDir + "/" + c.file;
    QVERIFY2(std::filesystem::exists(path), path.c_str());
    try {
      load_project(path);
      QFAIL("loaded without error");
    } catch (const ProjectError& e) {
      std::string all = e.what();
      QVERIFY2(all.find(path) != std::string::npos, all.c_str());
      bool found = false;
      for (const Diagnostic& d : e.diagnostics()) {
        QCOMPARE(d.file, path);
        if (!d.node.empty()) QVERIFY2(d.node.find("'" + d.node_id + "'") == 0, d.node.c_str());
        found = found || matches(d, c);
      }
      QVERIFY2(found, all.c_str());
    } catch (const std::exception& e) {
      QFAIL((std::string("not a ProjectError: ") + e.what()).c_str());
    }
  }

  void corpusHasNoUntestedFiles() {
    std::map<std::string, bool> listed;
    for (const BrokenCase& c : broken_cases()) listed[c.file] = true;
    for (const auto& entry : std::filesystem::directory_iterator(kBrokenDir)) {
      std::string name = entry.path().filename().string();
      QVERIFY2(listed.count(name), ("no expectation for " + name).c_str());
    }
    QVERIFY(broken_cases().size() >= 30);
  }

  void severalProblemsAreAllListed() {
    const std::string path = kBrokenDir + "/several_problems.json";
    try {
      load_project(path);
      QFAIL("loaded without error");
    } catch (const ProjectError& e) {
      const auto& ds = e.diagnostics();
      QCOMPARE(ds.size(), size_t{4});
      std::vector<std::string> fields;
      for (const Diagnostic& d : ds) fields.push_back(d.field);
      QVERIFY(std::find(fields.begin(), fields.end(), "params.kernel") != fields.end());
      QVERIFY(std::find(fields.begin(), fields.end(), "params.out_features") != fields.end());
      QVERIFY(std::find(fields.begin(), fields.end(), "training.epochs") != fields.end());
      QVERIFY(std::find(fields.begin(), fields.end(), "training.precision") != fields.end());
      std::string all = e.what();
      QCOMPARE(std::count(all.begin(), all.end(), '\n'), std::ptrdiff_t{3});
      QVERIFY(all.find("node 'conv1' (Conv2d), field 'params.kernel'") != std::string::npos);
    }
  }

  void syntaxErrorPosition() {
    try {
      parse_project("{\n  \"format\": 1,\n  \"name\": tru\n}", "mem.json");
      QFAIL("parsed");
    } catch (const ProjectError& e) {
      QCOMPARE(e.diagnostics().size(), size_t{1});
      const Diagnostic& d = e.diagnostics()[0];
      QCOMPARE(d.line, 3);
      QVERIFY(d.column > 0);
      QVERIFY2(d.message.rfind("invalid JSON: ", 0) == 0, d.message.c_str());
      QVERIFY(d.message.find("json.exception") == std::string::npos);
      QVERIFY(std::string(e.what()).rfind("mem.json:3:", 0) == 0);
    }
  }

  void hostileTextOnlyThrowsProjectError() {
    std::vector<std::string> inputs = {
        "",
        "null",
        "0",
        "\"\\ud800\"",
        "[1e309]",
        "{\"format\":1e400}",
        "{\"format\":-1e308}",
        "{\"format\":1,\"name\":\"x\",\"model\":{\"nodes\":[{}],\"edges\":[{}]}}",
        "{\"format\":1,\"name\":\"x\",\"model\":{\"nodes\":7,\"edges\":\"e\"},\"variants\":{}}",
        "{\"format\":18446744073709551615}",
        "{\"format\":-9223372036854775809}",
        "{\"format\":1,\"name\":\"x\",\"model\":{},\"training\":{\"seed\":1.8446744073709552e19}}",
        std::string(100000, '['),
        std::string(64, '[') + std::string(64, ']'),
        std::string("{\"a\":\"") + std::string(1000, '\\'),
        std::string("\0\0\0", 3),
        "{\"format\":1,\"name\":\"x\",\"model\":{\"nodes\":[{\"id\":\"a\",\"type\":\"Add\"}],"
        "\"edges\":[{\"from\":\"a\",\"to\":\"a\",\"to_port\":9999999999999}]}}"};
    for (const std::string& text : inputs) {
      try {
        parse_project(text, "h.json");
      } catch (const ProjectError& e) {
        QVERIFY(!e.diagnostics().empty());
        continue;
      } catch (const std::exception& e) {
        QFAIL((text.substr(0, 40) + ": " + e.what()).c_str());
      }
      QFAIL(("accepted: " + text.substr(0, 40)).c_str());
    }
  }

  void tooManyProblemsAreSummarised() {
    std::string text = R"({"format": 1, "name": "x", "model": {"nodes": [)";
    for (int i = 0; i < 500; ++i)
      text += std::string(i ? "," : "") + "{\"id\": \"n\", \"type\": \"X\"}";
    text += "]}}";
    try {
      parse_project(text, "many.json");
      QFAIL("parsed");
    } catch (const ProjectError& e) {
      QVERIFY(e.diagnostics().size() <= 201);
      QVERIFY(e.diagnostics().back().message.find("more problems") != std::string::npos);
    }
  }

  void loadMissingFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("nope.json").toStdString();
    try {
      load_project(path);
      QFAIL("loaded");
    } catch (const UsageError& e) {
      std::string m = e.what();
      QVERIFY2(m.find("cannot open project file '" + path + "'") != std::string::npos, m.c_str());
      QVERIFY2(m.find("No such file") != std::string::npos, m.c_str());
    }
    QVERIFY_THROWS_EXCEPTION(UsageError, load_project(dir.path().toStdString()));
  }

  void saveAndReload() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("p.json").toStdString();
    Project p = hand_built();
    save_project(p, path);
    QVERIFY(!std::filesystem::exists(path + ".tmp"));
    Project back = load_project(path);
    QCOMPARE(back.source_path, path);
    std::string d = differ(p, back);
    QVERIFY2(d.empty(), d.c_str());

    // Overwriting replaces the content.
    p.name = "second";
    save_project(p, path);
    QCOMPARE(load_project(path).name, std::string("second"));

    // When the temporary file cannot be written the old file stays whole.
    const std::string before = read_text(path);
    std::filesystem::create_directory(path + ".tmp");
    p.name = "third";
    QVERIFY_THROWS_EXCEPTION(UsageError, save_project(p, path));
    QCOMPARE(read_text(path), before);
    std::filesystem::remove(path + ".tmp");

    // A missing directory is a usage error, not a crash.
    QVERIFY_THROWS_EXCEPTION(UsageError,
                             save_project(p, dir.filePath("no/such/dir/p.json").toStdString()));
  }
};

QTEST_APPLESS_MAIN(TestProjectLoader)
#include "test_project_loader.moc"

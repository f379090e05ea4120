// SPDX-License-Identifier: GPL-3.0-or-later
// Tests analyze_model: NHWC shapes, parameters, FLOPs, and every problem naming its node.
#include <QtTest>

#include <string>
#include <vector>

#include <renaissance/error.h>
#include <renaissance/project.h>
#include <renaissance/project_io.h>
#include <renaissance/shape_inference.h>
#include "model_builder.h"

using namespace tr;

namespace {

// LeNet-5 exactly as projects/lenet-fashion.json has it.
ModelBuilder lenet() {
  ModelBuilder b;
  b.node("input", LayerType::Input, input(28, 28, 1))
      .node("conv1", LayerType::Conv2d, square_conv(6, 5, 1, 2))
      .node("relu1", LayerType::ReLU)
      .node("pool1", LayerType::MaxPool2d, pool(2, 2))
      .node("conv2", LayerType::Conv2d, square_conv(16, 5))
      .node("relu2", LayerType::ReLU)
      .node("pool2", LayerType::MaxPool2d, pool(2, 2))
      .node("flatten", LayerType::Flatten)
      .node("fc1", LayerType::Linear, linear(120))
      .node("relu3", LayerType::ReLU)
      .node("fc2", LayerType::Linear, linear(84))
      .node("relu4", LayerType::ReLU)
      .node("fc3", LayerType::Linear, linear(10))
      .node("loss", LayerType::SoftmaxCrossEntropy)
      .chain({"input", "conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc1",
              "relu3", "fc2", "relu4", "fc3", "loss"});
  return b;
}

const NodeAnalysis& at(const ModelAnalysis& a, const Project& p, const std::string& id) {
  const int i = p.model.find(id);
  if (i < 0) qFatal("no node %s", id.c_str());
  return a.nodes[static_cast<size_t>(i)];
}

Shape shape(const ModelAnalysis& a, const Project& p, const std::string& id) {
  return at(a, p, id).output;
}

// Problems reported on node `id`.
std::vector<Diagnostic> problems_on(const ModelAnalysis& a, const std::string& id) {
  std::vector<Diagnostic> out;
  for (const Diagnostic& d : a.problems)
    if (d.node_id == id) out.push_back(d);
  return out;
}

bool has_problem(const ModelAnalysis& a, const std::string& id, const std::string& text) {
  for (const Diagnostic& d : problems_on(a, id))
    if (d.message.find(text) != std::string::npos) return true;
  return false;
}

std::string all_messages(const ModelAnalysis& a) {
  std::string s;
  for (const Diagnostic& d : a.problems) s += d.str() + "\n";
  return s;
}

// Every problem about a node names it by id (and by label, as users see it),
// and the id is a node of the model. `model_level` problems (no Input, no
// loss) are about the whole model and carry no node.
void check_node_ids(const ModelAnalysis& a, const Project& p, int model_level = 0) {
  int without = 0;
  for (const Diagnostic& d : a.problems) {
    QCOMPARE(qs(d.file), qs(p.source_path));
    if (d.node_id.empty()) {
      ++without;
      QVERIFY2(d.node.empty(), d.str().c_str());
      continue;
    }
    const int i = p.model.find(d.node_id);
    QVERIFY2(i >= 0, d.str().c_str());
    QCOMPARE(qs(d.node), qs(p.model.nodes[static_cast<size_t>(i)].label()));
    QVERIFY2(d.str().find("'" + d.node_id + "'") != std::string::npos, d.str().c_str());
  }
  QCOMPARE(without, model_level);
}

}  // namespace

class TestShapeInference : public QObject {
  Q_OBJECT

 private slots:
  void lenetShapesPerLayer() {
    const Project p = lenet().build();
    const ModelAnalysis a = analyze_model(p, 32);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(shape(a, p, "input"), (Shape{32, 28, 28, 1}));
    QCOMPARE(shape(a, p, "conv1"), (Shape{32, 28, 28, 6}));
    QCOMPARE(shape(a, p, "relu1"), (Shape{32, 28, 28, 6}));
    QCOMPARE(shape(a, p, "pool1"), (Shape{32, 14, 14, 6}));
    QCOMPARE(shape(a, p, "conv2"), (Shape{32, 10, 10, 16}));
    QCOMPARE(shape(a, p, "relu2"), (Shape{32, 10, 10, 16}));
    QCOMPARE(shape(a, p, "pool2"), (Shape{32, 5, 5, 16}));
    QCOMPARE(shape(a, p, "flatten"), (Shape{32, 1, 1, 400}));
    QCOMPARE(shape(a, p, "fc1"), (Shape{32, 1, 1, 120}));
    QCOMPARE(shape(a, p, "fc2"), (Shape{32, 1, 1, 84}));
    QCOMPARE(shape(a, p, "fc3"), (Shape{32, 1, 1, 10}));
    // Each node's input is its producer's output.
    QCOMPARE(at(a, p, "conv2").inputs.size(), size_t{1});
    QCOMPARE(at(a, p, "conv2").inputs[0], (Shape{32, 14, 14, 6}));
    QCOMPARE(at(a, p, "loss").inputs[0], (Shape{32, 1, 1, 10}));
    for (const NodeAnalysis& na : a.nodes) QVERIFY(na.known);

    QCOMPARE(a.input_node, p.model.find("input"));
    QCOMPARE(a.loss_node, p.model.find("loss"));
    QCOMPARE(a.first_layer, p.model.find("conv1"));
    QCOMPARE(a.order.size(), p.model.nodes.size());
    // The order is topological: every producer comes before its consumer.
    std::vector<int> pos(p.model.nodes.size());
    for (size_t k = 0; k < a.order.size(); ++k)
      pos[static_cast<size_t>(a.order[k])] = static_cast<int>(k);
    for (const Edge& e : p.model.edges)
      QVERIFY(pos[static_cast<size_t>(e.from)] < pos[static_cast<size_t>(e.to)]);
    // Producer and consumer links.
    QCOMPARE(a.source_of(p.model.find("conv2"), 0).node, p.model.find("pool1"));
    QCOMPARE(a.consumers[static_cast<size_t>(p.model.find("pool1"))].size(), size_t{1});
    QCOMPARE(a.consumers[static_cast<size_t>(p.model.find("pool1"))][0].node,
             p.model.find("conv2"));
  }

  void lenetParameterCounts() {
    const Project p = lenet().build();
    const ModelAnalysis a = analyze_model(p, 1);
    QVERIFY(a.ok());
    QCOMPARE(at(a, p, "conv1").params, int64_t{5 * 5 * 1 * 6 + 6});    // 156
    QCOMPARE(at(a, p, "conv2").params, int64_t{5 * 5 * 6 * 16 + 16});  // 2416
    QCOMPARE(at(a, p, "fc1").params, int64_t{400 * 120 + 120});        // 48120
    QCOMPARE(at(a, p, "fc2").params, int64_t{120 * 84 + 84});          // 10164
    QCOMPARE(at(a, p, "fc3").params, int64_t{84 * 10 + 10});           // 850
    for (const char* id :
         {"input", "relu1", "pool1", "relu2", "pool2", "flatten", "relu3", "relu4", "loss"})
      QCOMPARE(at(a, p, id).params, int64_t{0});
    QCOMPARE(a.total_params, int64_t{61706});
    // Parameters do not depend on the batch.
    QCOMPARE(analyze_model(p, 256).total_params, int64_t{61706});
  }

  void parametersWithoutBiasAndBatchNorm() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 3))
        .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1, false))
        .node("bn", LayerType::BatchNorm2d)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10, false))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "bn", "gap", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(at(a, p, "conv").params, int64_t{3 * 3 * 3 * 4});
    QCOMPARE(at(a, p, "bn").params, int64_t{2 * 4});
    QCOMPARE(shape(a, p, "gap"), (Shape{2, 1, 1, 4}));
    QCOMPARE(at(a, p, "fc").params, int64_t{4 * 10});
    QCOMPARE(a.total_params, int64_t{108 + 8 + 40});
  }

  // A scale and a shift per channel; over a single channel it is refused on
  // its node, saying why and what would fit.
  void layerNormKeepsItsShape() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv", LayerType::Conv2d, square_conv(6, 3, 1, 1))
        .node("ln", LayerType::LayerNorm)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "ln", "gap", "fc", "loss"});
    Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(shape(a, p, "ln"), (Shape{2, 8, 8, 6}));
    QCOMPARE(at(a, p, "ln").params, int64_t{2 * 6});

    p.model.nodes[static_cast<size_t>(p.model.find("conv"))].params.out_channels = 1;
    const ModelAnalysis one = analyze_model(p, 2);
    QCOMPARE(one.problems.size(), size_t{1});
    const Diagnostic& d = one.problems.front();
    QCOMPARE(qs(d.node), QString("'ln' (LayerNorm)"));
    QVERIFY2(d.message.find("[N,8,8,1]") != std::string::npos &&
                 d.message.find("2 or more channels") != std::string::npos,
             d.message.c_str());
  }

  // TokenLinear keeps the positions; SelfAttention reads 3 x C channels and
  // gives C, refused on its node (and its field) where the channels or the
  // heads do not fit.
  void tokenLayersAndAttention() {
    auto project = [](int64_t qkv, int64_t heads) {
      ModelBuilder b;
      LayerParams attn;
      attn.heads = heads;
      b.node("input", LayerType::Input, input(8, 8, 1))
          .node("patch", LayerType::Conv2d, conv(16, 2, 2, 2, 2, 0, 0, true))
          .node("qkv", LayerType::TokenLinear, linear(qkv))
          .node("attn", LayerType::SelfAttention, attn)
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(10))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"input", "patch", "qkv", "attn", "gap", "fc", "loss"});
      return b.build();
    };
    const Project p = project(48, 4);
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(shape(a, p, "qkv"), (Shape{2, 4, 4, 48}));
    QCOMPARE(at(a, p, "qkv").params, int64_t{16 * 48 + 48});
    QCOMPARE(shape(a, p, "attn"), (Shape{2, 4, 4, 16}));
    QCOMPARE(at(a, p, "attn").params, int64_t{0});

    // The class token makes 1 + 16 tokens in a row; the pool takes one back.
    ModelBuilder b;
    b.project() = p;
    b.project().model = {};
    LayerParams attn;
    attn.heads = 4;
    LayerParams mean;
    mean.class_token = false;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("patch", LayerType::Conv2d, conv(16, 2, 2, 2, 2, 0, 0, true))
        .node("pos", LayerType::PositionEmbedding)
        .node("cls", LayerType::ClassToken)
        .node("qkv", LayerType::TokenLinear, linear(48))
        .node("attn", LayerType::SelfAttention, attn)
        .node("pool", LayerType::TokenPool, mean)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "patch", "pos", "cls", "qkv", "attn", "pool", "fc", "loss"});
    const Project with_token = b.build();
    const ModelAnalysis t = analyze_model(with_token, 2);
    QVERIFY2(t.ok(), all_messages(t).c_str());
    QCOMPARE(at(t, with_token, "pos").params, int64_t{4 * 4 * 16});
    QCOMPARE(shape(t, with_token, "cls"), (Shape{2, 1, 17, 16}));
    QCOMPARE(at(t, with_token, "cls").params, int64_t{16});
    QCOMPARE(shape(t, with_token, "attn"), (Shape{2, 1, 17, 16}));
    QCOMPARE(shape(t, with_token, "pool"), (Shape{2, 1, 1, 16}));

    const ModelAnalysis not_three = analyze_model(project(40, 4), 2);
    QCOMPARE(not_three.problems.size(), size_t{1});
    QCOMPARE(qs(not_three.problems[0].node), QString("'attn' (SelfAttention)"));
    QVERIFY2(
        not_three.problems[0].message.find("TokenLinear with 3 x C outputs") != std::string::npos,
        not_three.problems[0].message.c_str());

    const ModelAnalysis heads = analyze_model(project(48, 3), 2);
    QCOMPARE(heads.problems.size(), size_t{1});
    QCOMPARE(qs(heads.problems[0].field), QString("params.heads"));
    QVERIFY2(heads.problems[0].message.find("3 heads do not divide the 16 channels") !=
                 std::string::npos,
             heads.problems[0].message.c_str());
  }

  // MultiHeadSelfAttention keeps its input's shape and holds both
  // projections' weights; its heads must divide the channels, and its parts'
  // ids (taken once compiled) must be free.
  void multiHeadSelfAttention() {
    auto project = [](int64_t heads, bool bias, const char* other_id) {
      ModelBuilder b;
      LayerParams mhsa;
      mhsa.heads = heads;
      mhsa.bias = bias;
      b.node("input", LayerType::Input, input(8, 8, 1))
          .node("patch", LayerType::Conv2d, conv(16, 2, 2, 2, 2, 0, 0, true))
          .node("attn", LayerType::MultiHeadSelfAttention, mhsa)
          .node(other_id, LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(10))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"input", "patch", "attn", other_id, "fc", "loss"});
      return b.build();
    };
    const Project p = project(4, true, "gap");
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(shape(a, p, "attn"), (Shape{2, 4, 4, 16}));
    // in_proj [48, 16] and 48 biases, out_proj [16, 16] and 16.
    QCOMPARE(at(a, p, "attn").params, int64_t{48 * 16 + 48 + 16 * 16 + 16});
    // Both projections (2 x 32 tokens x 16 x 64) and their biases, and the attention.
    QCOMPARE(at(a, p, "attn").flops, int64_t{2 * 32 * 16 * 64 + 32 * 64 + 4 * 2 * 16 * 16 * 16});
    QCOMPARE(at(analyze_model(project(4, false, "gap"), 2), p, "attn").params,
             int64_t{48 * 16 + 16 * 16});

    const ModelAnalysis heads = analyze_model(project(3, true, "gap"), 2);
    QCOMPARE(heads.problems.size(), size_t{1});
    QCOMPARE(qs(heads.problems[0].node), QString("'attn' (MultiHeadSelfAttention)"));
    QCOMPARE(qs(heads.problems[0].field), QString("params.heads"));
    QVERIFY2(heads.problems[0].message.find("3 heads do not divide the 16 channels of its "
                                            "queries; choose a divisor of 16") != std::string::npos,
             heads.problems[0].message.c_str());

    const ModelAnalysis taken = analyze_model(project(4, true, "attn.out_proj"), 2);
    QCOMPARE(taken.problems.size(), size_t{1});
    QCOMPARE(qs(taken.problems[0].node), QString("'attn' (MultiHeadSelfAttention)"));
    QCOMPARE(qs(taken.problems[0].field), QString("id"));
    QVERIFY2(taken.problems[0].message.find("its part 'attn.out_proj' (TokenLinear) takes that "
                                            "id") != std::string::npos,
             taken.problems[0].message.c_str());
  }

  void groupedAndDepthwiseConvolutions() {
    // 8 channels -> 16 in 2 groups; depthwise 16 -> 32 (a multiplier of 2).
    LayerParams grouped = square_conv(16, 3, 1, 1, false);
    grouped.groups = 2;
    LayerParams depthwise = square_conv(32, 3, 1, 1, true);
    depthwise.groups = 16;
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 8))
        .node("grouped", LayerType::Conv2d, grouped)
        .node("depthwise", LayerType::Conv2d, depthwise)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "grouped", "depthwise", "gap", "fc", "loss"});
    Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(at(a, p, "grouped").params, int64_t{3 * 3 * 4 * 16});
    QCOMPARE(at(a, p, "grouped").flops, int64_t{2 * 2 * 8 * 8 * 16 * 3 * 3 * 4});
    QCOMPARE(at(a, p, "depthwise").params, int64_t{3 * 3 * 1 * 32 + 32});
    QCOMPARE(shape(a, p, "depthwise"), (Shape{2, 8, 8, 32}));
    // Groups that divide neither side: one problem, on the field, saying what divides what.
    p.model.nodes[static_cast<size_t>(p.model.find("depthwise"))].params.groups = 3;
    const ModelAnalysis bad = analyze_model(p, 2);
    QCOMPARE(bad.problems.size(), size_t{1});
    const Diagnostic& d = bad.problems.front();
    QCOMPARE(qs(d.node_id), QString("depthwise"));
    QCOMPARE(qs(d.field), QString("params.groups"));
    QVERIFY2(d.message.find("3 groups do not divide the 16 input channels") != std::string::npos,
             d.message.c_str());
  }

  void concatJoinsChannelsOfOneHeightAndWidth() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 3))
        .node("a", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("b", LayerType::Conv2d, square_conv(6, 1))
        .node("cat", LayerType::Concat)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "a", "cat", "gap", "fc", "loss"})
        .edge("input", "b")
        .edge("b", "cat", 1);
    Project p = b.build();
    // (The Input feeds two layers here; only shapes are asked.)
    ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(shape(a, p, "cat"), (Shape{2, 8, 8, 10}));
    QCOMPARE(at(a, p, "cat").params, int64_t{0});
    // A branch of another size: named, with both shapes.
    p.model.nodes[static_cast<size_t>(p.model.find("b"))].params.stride_h = 2;
    p.model.nodes[static_cast<size_t>(p.model.find("b"))].params.stride_w = 2;
    a = analyze_model(p, 2);
    bool found = false;
    for (const Diagnostic& d : a.problems)
      if (d.node_id == "cat") {
        found = true;
        QVERIFY2(d.message.find("[N,8,8,4]") != std::string::npos &&
                     d.message.find("[N,4,4,6]") != std::string::npos,
                 d.message.c_str());
      }
    QVERIFY2(found, all_messages(a).c_str());
  }

  void concatTakesItsNumberOfInputs() {
    // Three inputs: the channels in port order; a port left open is named.
    LayerParams three;
    three.inputs = 3;
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 3))
        .node("a", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("b", LayerType::Conv2d, square_conv(6, 1))
        .node("cat", LayerType::Concat, three)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "a", "cat", "gap", "fc", "loss"})
        .edge("input", "b")
        .edge("b", "cat", 1)
        .edge("a", "cat", 2);
    Project p = b.build();
    ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(shape(a, p, "cat"), (Shape{2, 8, 8, 14}));
    QCOMPARE(a.source_of(p.model.find("cat"), 2).node, p.model.find("a"));
    p.model.nodes[static_cast<size_t>(p.model.find("cat"))].params.inputs = 4;
    a = analyze_model(p, 2);
    bool open = false;
    for (const Diagnostic& d : a.problems)
      open |= d.node_id == "cat" && d.message == "input port 3 is not connected";
    QVERIFY2(open, all_messages(a).c_str());
    // Two inputs again: the edge into port 2 no longer counts.
    p.model.nodes[static_cast<size_t>(p.model.find("cat"))].params.inputs = 2;
    a = analyze_model(p, 2);
    QCOMPARE(shape(a, p, "cat"), (Shape{2, 8, 8, 10}));
  }

  void convForwardFlops() {
    const Project p = lenet().build();
    const int64_t n = 16;
    const ModelAnalysis a = analyze_model(p, n);
    QVERIFY(a.ok());
    // conv2: 14x14x6 -> 10x10x16 with a 5x5 kernel: 2*N*Ho*Wo*Co*Ci*k*k plus one add per output for
    // the bias.
    const int64_t conv2 = 2 * n * 10 * 10 * 16 * 6 * 5 * 5 + n * 10 * 10 * 16;
    QCOMPARE(at(a, p, "conv2").flops, conv2);
    const int64_t conv1 = 2 * n * 28 * 28 * 6 * 1 * 5 * 5 + n * 28 * 28 * 6;
    QCOMPARE(at(a, p, "conv1").flops, conv1);
    // fc1: 2*N*K*O + bias
    QCOMPARE(at(a, p, "fc1").flops, 2 * n * 400 * 120 + n * 120);
    int64_t sum = 0;
    for (const NodeAnalysis& na : a.nodes) sum += na.flops;
    QCOMPARE(a.total_flops, sum);
    // FLOPs scale with the batch.
    QCOMPARE(analyze_model(p, 2 * n).total_flops, 2 * a.total_flops);

    // Without bias there is no extra add.
    ModelBuilder b = lenet();
    b.project().model.nodes[static_cast<size_t>(b.project().model.find("conv2"))].params.bias =
        false;
    const Project q = b.build();
    const ModelAnalysis a2 = analyze_model(q, n);
    QCOMPARE(at(a2, q, "conv2").flops, 2 * n * 10 * 10 * 16 * 6 * 5 * 5);
    QCOMPARE(at(a2, q, "conv2").params, int64_t{5 * 5 * 6 * 16});
  }

  void nonSquareKernelsStridesPadding() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(30, 20, 3))
        // kernel [3,5], stride [2,1], padding [1,2]
        .node("conv", LayerType::Conv2d, conv(8, 3, 5, 2, 1, 1, 2))
        // kernel [2,4], stride [2,4], padding [1,2]
        .node("pool", LayerType::AvgPool2d, conv(0, 2, 4, 2, 4, 1, 2))
        // kernel [1,3], stride [1,1], no padding, no bias
        .node("conv2", LayerType::Conv2d, conv(5, 1, 3, 1, 1, 0, 0, false))
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "pool", "conv2", "flatten", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 4);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    // H: (30 + 2 - 3) / 2 + 1 = 15; W: (20 + 4 - 5) / 1 + 1 = 20
    QCOMPARE(shape(a, p, "conv"), (Shape{4, 15, 20, 8}));
    QCOMPARE(at(a, p, "conv").params, int64_t{3 * 5 * 3 * 8 + 8});
    QCOMPARE(at(a, p, "conv").flops, 2 * int64_t{4 * 15 * 20 * 8} * (3 * 5 * 3) + 4 * 15 * 20 * 8);
    // H: (15 + 2 - 2) / 2 + 1 = 8; W: (20 + 4 - 4) / 4 + 1 = 6
    QCOMPARE(shape(a, p, "pool"), (Shape{4, 8, 6, 8}));
    QCOMPARE(at(a, p, "pool").params, int64_t{0});
    // H: 8; W: 6 - 3 + 1 = 4
    QCOMPARE(shape(a, p, "conv2"), (Shape{4, 8, 4, 5}));
    QCOMPARE(at(a, p, "conv2").params, int64_t{1 * 3 * 8 * 5});
    QCOMPARE(shape(a, p, "flatten"), (Shape{4, 1, 1, 160}));
    QCOMPARE(at(a, p, "fc").params, int64_t{160 * 10 + 10});

    // Swapping the pairs swaps the result.
    ModelBuilder t;
    t.node("input", LayerType::Input, input(20, 30, 3))
        .node("conv", LayerType::Conv2d, conv(8, 5, 3, 1, 2, 2, 1))
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "gap", "fc", "loss"});
    const Project q = t.build();
    const ModelAnalysis aq = analyze_model(q, 4);
    QVERIFY2(aq.ok(), all_messages(aq).c_str());
    QCOMPARE(shape(aq, q, "conv"), (Shape{4, 20, 15, 8}));
    QCOMPARE(shape(aq, q, "gap"), (Shape{4, 1, 1, 8}));
  }

  void lenetFromProjectFileMatches() {
    const Project file = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    const Project code = lenet().build();
    const ModelAnalysis af = analyze_model(file, 128);
    const ModelAnalysis ac = analyze_model(code, 128);
    QVERIFY2(af.ok(), all_messages(af).c_str());
    QCOMPARE(af.total_params, int64_t{61706});
    QCOMPARE(af.total_flops, ac.total_flops);
    for (const LayerNode& n : code.model.nodes) {
      QVERIFY2(file.model.find(n.id) >= 0, n.id.c_str());
      QCOMPARE(shape(af, file, n.id), shape(ac, code, n.id));
      QCOMPARE(at(af, file, n.id).params, at(ac, code, n.id).params);
    }
  }

  void addWithMismatchedShapes() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(28, 28, 1))
        .node("conv1", LayerType::Conv2d, square_conv(6, 5, 1, 2))
        .node("relu", LayerType::ReLU)
        .node("pool", LayerType::MaxPool2d, pool(2, 2))
        .node("add", LayerType::Add)
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "relu", "pool"})
        .edge("pool", "add", 0)
        .edge("relu", "add", 1)
        .chain({"add", "flatten", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 8);
    QVERIFY(!a.ok());
    QCOMPARE(a.problems.size(), size_t{1});
    const Diagnostic& d = a.problems.front();
    QCOMPARE(qs(d.node_id), QString("add"));
    QCOMPARE(qs(d.node), QString("'add' (Add)"));
    QVERIFY2(d.message.find("[N,14,14,6]") != std::string::npos, d.message.c_str());
    QVERIFY2(d.message.find("[N,28,28,6]") != std::string::npos, d.message.c_str());
    // Port 0 gets the pooled branch, port 1 the full-size one.
    QVERIFY(d.message.find("[N,14,14,6]") < d.message.find("[N,28,28,6]"));
    QVERIFY(!at(a, p, "add").known);
    QVERIFY(!at(a, p, "fc").known);  // nothing downstream is guessed
    QVERIFY(at(a, p, "pool").known);
    check_node_ids(a, p);
    // With equal shapes it is fine.
    ModelBuilder ok;
    ok.node("input", LayerType::Input, input(28, 28, 1))
        .node("conv1", LayerType::Conv2d, square_conv(6, 5, 1, 2))
        .node("relu", LayerType::ReLU)
        .node("add", LayerType::Add)
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "relu"})
        .edge("relu", "add", 0)
        .edge("conv1", "add", 1)
        .chain({"add", "flatten", "fc", "loss"});
    const Project q = ok.build();
    const ModelAnalysis aq = analyze_model(q, 8);
    QVERIFY2(aq.ok(), all_messages(aq).c_str());
    QCOMPARE(shape(aq, q, "add"), (Shape{8, 28, 28, 6}));
    QCOMPARE(at(aq, q, "add").inputs.size(), size_t{2});
  }

  void cycleIsReportedWithItsPath() {
    // input -> conv -> add(port 0); add -> relu -> add(port 1): add and relu form a loop.
    // flatten, fc and loss only sit downstream of it.
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("relu", LayerType::ReLU)
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv"})
        .edge("conv", "add", 0)
        .edge("add", "relu")
        .edge("relu", "add", 1)
        .chain({"relu", "flatten", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY(!a.ok());
    QVERIFY2(has_problem(a, "add", "cycle"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "relu", "cycle"), all_messages(a).c_str());
    // Each names the loop, starting from itself.
    QVERIFY2(has_problem(a, "add", "add -> relu -> add"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "relu", "relu -> add -> relu"), all_messages(a).c_str());
    // Nodes downstream of the loop are not on it.
    for (const char* id : {"input", "conv", "flatten", "fc", "loss"})
      QVERIFY2(!has_problem(a, id, "cycle"), all_messages(a).c_str());
    QCOMPARE(a.problems.size(), size_t{2});
    // The order holds only the nodes before the loop; their shapes are known.
    QCOMPARE(a.order.size(), size_t{2});
    QVERIFY(at(a, p, "conv").known);
    QVERIFY(!at(a, p, "add").known);
    check_node_ids(a, p);
  }

  void longerCycleAndSelfLoop() {
    // conv2 -> relu -> pool -> conv2 (three nodes), and a self loop on relu2.
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("relu", LayerType::ReLU)
        .node("pool", LayerType::MaxPool2d, pool(1, 1))
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .node("self", LayerType::Add)
        .edge("input", "conv1")
        .edge("conv1", "add", 0)
        .edge("add", "relu")
        .edge("relu", "pool")
        .edge("pool", "add", 1)
        .edge("pool", "gap")
        .chain({"gap", "fc", "loss"})
        .edge("self", "self", 0)
        .edge("self", "self", 1);
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QVERIFY2(has_problem(a, "add", "add -> relu -> pool -> add"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "relu", "relu -> pool -> add -> relu"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "pool", "pool -> add -> relu -> pool"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "self", "self -> self"), all_messages(a).c_str());
    for (const char* id : {"gap", "fc", "loss"})
      QVERIFY2(!has_problem(a, id, "cycle"), all_messages(a).c_str());
    check_node_ids(a, p);
  }

  void unconnectedInputPort() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv"})
        .edge("conv", "add", 0)
        .chain({"add", "gap", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(a.problems.size(), size_t{1});
    QVERIFY2(has_problem(a, "add", "input port 1 is not connected"), all_messages(a).c_str());
    QVERIFY(!has_problem(a, "add", "input port 0"));
    QVERIFY(!at(a, p, "add").known);
    QVERIFY(at(a, p, "conv").known);
    QCOMPARE(a.source_of(p.model.find("add"), 1).node, -1);
    check_node_ids(a, p);
  }

  void unusedOutputIsDangling() {
    ModelBuilder b = lenet();
    b.node("extra", LayerType::ReLU).edge("conv2", "extra");
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 4);
    QCOMPARE(a.problems.size(), size_t{1});
    QVERIFY2(has_problem(a, "extra", "not used"), all_messages(a).c_str());
    QVERIFY(at(a, p, "extra").known);  // its shape is still inferred
    QCOMPARE(shape(a, p, "extra"), (Shape{4, 10, 10, 16}));
    check_node_ids(a, p);
  }

  void noInputAndTwoInputs() {
    {
      ModelBuilder b = lenet();
      Project& p = b.project();
      // Remove the Input node: conv1 is left with an open port.
      p.model.nodes.erase(p.model.nodes.begin());
      p.model.edges.erase(p.model.edges.begin());
      for (Edge& e : p.model.edges) {
        --e.from;
        --e.to;
      }
      const ModelAnalysis a = analyze_model(p, 4);
      QCOMPARE(a.input_node, -1);
      bool found = false;
      for (const Diagnostic& d : a.problems)
        if (d.node_id.empty() && d.message.find("no Input") != std::string::npos) found = true;
      QVERIFY2(found, all_messages(a).c_str());
      QVERIFY2(has_problem(a, "conv1", "input port 0 is not connected"), all_messages(a).c_str());
      QCOMPARE(a.first_layer, -1);
      check_node_ids(a, p, 1);
    }
    {
      ModelBuilder b;
      b.node("input", LayerType::Input, input(8, 8, 1))
          .node("input2", LayerType::Input, input(8, 8, 1))
          .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
          .node("conv_b", LayerType::Conv2d, square_conv(4, 3, 1, 1))
          .node("add", LayerType::Add)
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(10))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .edge("input", "conv1")
          .edge("input2", "conv_b")
          .edge("conv1", "add", 0)
          .edge("conv_b", "add", 1)
          .chain({"add", "gap", "fc", "loss"});
      const Project p = b.build();
      const ModelAnalysis a = analyze_model(p, 4);
      QCOMPARE(a.input_node, p.model.find("input"));
      QCOMPARE(a.problems.size(), size_t{1});
      QVERIFY2(has_problem(a, "input2", "exactly one Input"), all_messages(a).c_str());
      // The message names the node that is already the input.
      QVERIFY2(has_problem(a, "input2", "'input' (Input)"), all_messages(a).c_str());
      check_node_ids(a, p);
    }
  }

  void noLossAndTwoLosses() {
    {
      ModelBuilder b = lenet();
      Project& p = b.project();
      p.model.nodes.pop_back();
      p.model.edges.pop_back();
      const ModelAnalysis a = analyze_model(p, 4);
      QCOMPARE(a.loss_node, -1);
      bool found = false;
      for (const Diagnostic& d : a.problems)
        if (d.node_id.empty() && d.message.find("no SoftmaxCrossEntropy") != std::string::npos)
          found = true;
      QVERIFY2(found, all_messages(a).c_str());
      QVERIFY2(has_problem(a, "fc3", "not used"), all_messages(a).c_str());
      check_node_ids(a, p, 1);
    }
    {
      ModelBuilder b = lenet();
      b.node("loss2", LayerType::SoftmaxCrossEntropy).edge("fc3", "loss2");
      const Project p = b.build();
      const ModelAnalysis a = analyze_model(p, 4);
      QVERIFY2(has_problem(a, "loss2", "exactly one SoftmaxCrossEntropy"), all_messages(a).c_str());
      QCOMPARE(a.loss_node, p.model.find("loss"));
      check_node_ids(a, p);
    }
  }

  void lossClassesMustMatchDataset() {
    ModelBuilder b = lenet();
    b.project().dataset.kind = DatasetKind::Synthetic;
    b.project().dataset.classes = 7;
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 4);
    QCOMPARE(a.problems.size(), size_t{1});
    const Diagnostic& d = a.problems.front();
    QCOMPARE(qs(d.node_id), QString("loss"));
    QVERIFY2(d.message.find("10") != std::string::npos, d.message.c_str());
    QVERIFY2(d.message.find("7 classes") != std::string::npos, d.message.c_str());
    check_node_ids(a, p);
  }

  void lossNeedsFlatInput() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv", LayerType::Conv2d, square_conv(10, 3, 1, 1))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(a.problems.size(), size_t{1});
    QVERIFY2(has_problem(a, "loss", "flat"), all_messages(a).c_str());
    QVERIFY2(has_problem(a, "loss", "[N,8,8,10]"), all_messages(a).c_str());
    QVERIFY(!at(a, p, "loss").known);
    check_node_ids(a, p);
  }

  void kernelLargerThanInput() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(4, 4, 1))
        .node("conv", LayerType::Conv2d, square_conv(4, 5))
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "flatten", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(a.problems.size(), size_t{1});
    const Diagnostic& d = a.problems.front();
    QCOMPARE(qs(d.node_id), QString("conv"));
    QCOMPARE(qs(d.field), QString("params.kernel"));
    QVERIFY2(d.message.find("5x5") != std::string::npos, d.message.c_str());
    QVERIFY2(d.message.find("4x4") != std::string::npos, d.message.c_str());
    QVERIFY(!at(a, p, "conv").known);
    // Enough padding makes it fit: 4 + 2*1 - 5 + 1 = 2.
    b.project().model.nodes[1].params.pad_h = 1;
    b.project().model.nodes[1].params.pad_w = 1;
    const Project q = b.build();
    const ModelAnalysis aq = analyze_model(q, 2);
    QVERIFY2(aq.ok(), all_messages(aq).c_str());
    QCOMPARE(shape(aq, q, "conv"), (Shape{2, 2, 2, 4}));
    // A pooling window larger than its input is the same problem.
    ModelBuilder c;
    c.node("input", LayerType::Input, input(6, 6, 1))
        .node("conv", LayerType::Conv2d, square_conv(4, 3))
        .node("pool", LayerType::MaxPool2d, conv(0, 2, 5, 1, 1))
        .node("flatten", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv", "pool", "flatten", "fc", "loss"});
    const Project r = c.build();
    const ModelAnalysis ar = analyze_model(r, 2);
    QVERIFY2(has_problem(ar, "pool", "2x5"), all_messages(ar).c_str());
    QVERIFY2(has_problem(ar, "pool", "4x4"), all_messages(ar).c_str());
    check_node_ids(ar, r);
  }

  void poolPaddingAtMostHalfTheKernel() {
    auto model = [](int64_t k, int64_t pad) {
      ModelBuilder b;
      b.node("input", LayerType::Input, input(8, 8, 1))
          .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1))
          .node("pool", LayerType::MaxPool2d, pool(k, k, pad))
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(10))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"input", "conv", "pool", "gap", "fc", "loss"});
      return b.build();
    };
    {
      const Project p = model(2, 2);
      const ModelAnalysis a = analyze_model(p, 2);
      QCOMPARE(a.problems.size(), size_t{1});
      QCOMPARE(qs(a.problems.front().node_id), QString("pool"));
      QCOMPARE(qs(a.problems.front().field), QString("params.padding"));
      QVERIFY2(has_problem(a, "pool", "half the kernel"), all_messages(a).c_str());
      check_node_ids(a, p);
    }
    {
      const Project p = model(3, 2);  // 2 > 3/2
      QVERIFY(!analyze_model(p, 2).ok());
    }
    {
      const Project p = model(3, 1);  // 1 <= 3/2: fine, (8 + 2 - 3) / 3 + 1 = 3
      const ModelAnalysis a = analyze_model(p, 2);
      QVERIFY2(a.ok(), all_messages(a).c_str());
      QCOMPARE(shape(a, p, "pool"), (Shape{2, 3, 3, 4}));
    }
    {
      // Only one side too large: kernel [2,4] with padding [1,3].
      ModelBuilder b;
      b.node("input", LayerType::Input, input(8, 8, 1))
          .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1))
          .node("pool", LayerType::AvgPool2d, conv(0, 2, 4, 2, 4, 1, 3))
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(10))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"input", "conv", "pool", "gap", "fc", "loss"});
      const Project p = b.build();
      QVERIFY(has_problem(analyze_model(p, 2), "pool", "padding"));
    }
  }

  void inputFeedsOnlyTheFirstLayer() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv_a", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("conv_b", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .edge("input", "conv_a")
        .edge("input", "conv_b")
        .edge("conv_a", "add", 0)
        .edge("conv_b", "add", 1)
        .chain({"add", "gap", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(a.problems.size(), size_t{1});
    QVERIFY2(has_problem(a, "input", "feeds 2 layers"), all_messages(a).c_str());
    QCOMPARE(a.first_layer, -1);
    // Shapes are still inferred everywhere.
    for (const NodeAnalysis& na : a.nodes) QVERIFY(na.known);
    check_node_ids(a, p);
  }

  void firstLayerMustHaveWeights() {
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("relu", LayerType::ReLU)
        .node("conv", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "relu", "conv", "gap", "fc", "loss"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 2);
    QCOMPARE(a.problems.size(), size_t{1});
    QVERIFY2(has_problem(a, "relu", "Conv2d or Linear"), all_messages(a).c_str());
    QCOMPARE(a.first_layer, -1);
    check_node_ids(a, p);

    // A Linear layer may be the first layer (an MLP): it reads the image as a flat vector.
    ModelBuilder m;
    m.node("input", LayerType::Input, input(28, 28, 1))
        .node("fc1", LayerType::Linear, linear(32))
        .node("relu", LayerType::ReLU)
        .node("fc2", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "fc1", "relu", "fc2", "loss"});
    const Project q = m.build();
    const ModelAnalysis aq = analyze_model(q, 2);
    QVERIFY2(aq.ok(), all_messages(aq).c_str());
    QCOMPARE(aq.first_layer, q.model.find("fc1"));
    QCOMPARE(at(aq, q, "fc1").params, int64_t{784 * 32 + 32});
    QCOMPARE(shape(aq, q, "fc1"), (Shape{2, 1, 1, 32}));
  }

  void resolutionOverrideChangesShapes() {
    const Project p = lenet().build();
    const ModelAnalysis a = analyze_model(p, 8, 32, 36);
    QVERIFY2(a.ok(), all_messages(a).c_str());
    QCOMPARE(shape(a, p, "input"), (Shape{8, 32, 36, 1}));
    QCOMPARE(shape(a, p, "conv1"), (Shape{8, 32, 36, 6}));
    QCOMPARE(shape(a, p, "pool1"), (Shape{8, 16, 18, 6}));
    QCOMPARE(shape(a, p, "conv2"), (Shape{8, 12, 14, 16}));
    QCOMPARE(shape(a, p, "pool2"), (Shape{8, 6, 7, 16}));
    QCOMPARE(shape(a, p, "flatten"), (Shape{8, 1, 1, 672}));
    QCOMPARE(shape(a, p, "fc3"), (Shape{8, 1, 1, 10}));
    // Only the layer after Flatten changes its parameter count.
    QCOMPARE(at(a, p, "fc1").params, int64_t{672 * 120 + 120});
    QCOMPARE(at(a, p, "conv2").params, int64_t{2416});
    // Height alone.
    const ModelAnalysis h = analyze_model(p, 8, 20, 0);
    QCOMPARE(shape(h, p, "input"), (Shape{8, 20, 28, 1}));
    QCOMPARE(shape(h, p, "pool2"), (Shape{8, 3, 5, 16}));
    // A resolution too small for the kernels is a problem on the layer that no longer fits.
    const ModelAnalysis tiny = analyze_model(p, 8, 8, 8);
    QVERIFY2(has_problem(tiny, "conv2", "does not fit"), all_messages(tiny).c_str());
  }

  void halfBuiltGraphStillInfersShapes() {
    // What the designer has after a few clicks: no loss yet, a Linear not yet wired.
    ModelBuilder b;
    b.node("input", LayerType::Input, input(28, 28, 1))
        .node("conv1", LayerType::Conv2d, square_conv(6, 5, 1, 2))
        .node("relu1", LayerType::ReLU)
        .node("pool1", LayerType::MaxPool2d, pool(2, 2))
        .node("fc", LayerType::Linear, linear(10))
        .chain({"input", "conv1", "relu1", "pool1"});
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 1);
    QVERIFY(!a.ok());
    QVERIFY(at(a, p, "input").known);
    QVERIFY(at(a, p, "conv1").known);
    QVERIFY(at(a, p, "pool1").known);
    QCOMPARE(shape(a, p, "conv1"), (Shape{1, 28, 28, 6}));
    QCOMPARE(shape(a, p, "pool1"), (Shape{1, 14, 14, 6}));
    QCOMPARE(at(a, p, "conv1").params, int64_t{156});
    QVERIFY(!at(a, p, "fc").known);
    QCOMPARE(at(a, p, "fc").params, int64_t{0});
    QCOMPARE(a.total_params, int64_t{156});
    QCOMPARE(a.first_layer, p.model.find("conv1"));
    QVERIFY(has_problem(a, "fc", "input port 0 is not connected"));
    QVERIFY(has_problem(a, "fc", "not used"));
    QVERIFY(has_problem(a, "pool1", "not used"));
    check_node_ids(a, p, 1);  // "no loss" is about the whole model

    // A node just dropped in with its parameters not filled in yet is a
    // problem on that node, not a crash or a silent zero.
    ModelBuilder c;
    c.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv", LayerType::Conv2d, LayerParams{})           // out_channels 0
        .node("pool", LayerType::MaxPool2d, conv(0, 2, 2, 0, 0))  // stride 0
        .node("fc", LayerType::Linear, LayerParams{})
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv"})
        .edge("input", "pool")  // also a second reader of the Input
        .chain({"pool", "fc", "loss"});
    const Project q = c.build();
    const ModelAnalysis aq = analyze_model(q, 2);
    QVERIFY2(has_problem(aq, "conv", "positive"), all_messages(aq).c_str());
    QVERIFY2(has_problem(aq, "pool", "stride"), all_messages(aq).c_str());
    QVERIFY(!at(aq, q, "conv").known);
    QVERIFY(!at(aq, q, "pool").known);
    QVERIFY(at(aq, q, "input").known);
    check_node_ids(aq, q);

    // An empty model: only the two model-level problems.
    Project empty;
    const ModelAnalysis ae = analyze_model(empty, 1);
    QCOMPARE(ae.problems.size(), size_t{2});
    QVERIFY(ae.order.empty());
  }

  void requireValidThrowsWithAllProblems() {
    const Project good = lenet().build();
    require_valid(analyze_model(good, 4));  // must not throw

    ModelBuilder b = lenet();
    b.node("extra", LayerType::ReLU).edge("conv2", "extra");  // unused output
    b.project().dataset.kind = DatasetKind::Synthetic;
    b.project().dataset.classes = 5;                        // loss mismatch
    b.node("add", LayerType::Add).edge("pool2", "add", 0);  // open port 1, unused output
    const Project p = b.build();
    const ModelAnalysis a = analyze_model(p, 4);
    QCOMPARE(a.problems.size(), size_t{4});
    check_node_ids(a, p);
    bool thrown = false;
    try {
      require_valid(a);
    } catch (const ProjectError& e) {
      thrown = true;
      QCOMPARE(e.diagnostics().size(), a.problems.size());
      const std::string what = e.what();
      for (const Diagnostic& d : a.problems) {
        QVERIFY2(what.find(d.message) != std::string::npos, d.message.c_str());
        QVERIFY(what.find("'" + d.node_id + "'") != std::string::npos);
      }
      QVERIFY(what.find("in-memory.json") != std::string::npos);
    }
    QVERIFY(thrown);
  }
};

QTEST_APPLESS_MAIN(TestShapeInference)
#include "test_shape_inference.moc"

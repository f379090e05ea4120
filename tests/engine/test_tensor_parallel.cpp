// SPDX-License-Identifier: GPL-3.0-or-later
// Tensor parallel over the device mesh's `tensor` dimension on CPU ranks,
// with sequence parallel (each rank computes the whole layers for its own
// samples): an MLP's Linear pair and a transformer block (attention split
// by heads, its MLP by features) train as one rank does, to reduction order
// (1e-5 relative in FP32 over an epoch; the partial products and the whole
// layers' gradients add in another order); a 2x2 mesh trains as four
// ranks do; the final
// weights and checkpoints hold whole tensors, which a run on another mesh
// resumes from; the plan holds each rank's part; layers and meshes that
// cannot split are refused with the numbers.
#include <QtTest>

#include <map>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include <renaissance/plan_report.h>
#include <renaissance/predict.h>
#include <renaissance/project_io.h>
#include <nlohmann/json.hpp>
#include "plan/tensor_shards.h"
#include "png_files.h"
#include "rank_runs.h"

using namespace tr;
using rank_runs::relative_difference;
using rank_runs::run;

namespace {

Project on(Project p, int world, int tensor) {
  p.training.devices.ids.clear();
  for (int r = 0; r < world; ++r) p.training.devices.ids.push_back(r);
  p.training.tensor_ranks = tensor;
  // The validation batch is per rank: keep the global one.
  for (VariantSpec& v : p.variants)
    if (v.kind == VariantKind::Validation) v.batch = 100 / world;
  return p;
}

// 8x8 synthetic images in 4 classes, 272 training samples in batches of 32.
ModelBuilder synthetic_builder(const char* name) {
  ModelBuilder b;
  b.synthetic_data(8, 8, 1, 4, 272, 200, 100);
  Project& p = b.project();
  p.name = name;
  p.training.global_batch = 32;
  p.training.epochs = 1;
  p.training.optimizer.kind = OptimizerKind::Adam;
  p.training.optimizer.lr = 0.003;
  p.training.seed = 11;
  return b;
}

// Linear 64 -> 32, ReLU, Linear 32 -> 32, ReLU, Linear 32 -> 4: the first
// Linear reads the input and stays whole, the second pair splits.
Project mlp() {
  ModelBuilder b = synthetic_builder("tp-mlp");
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("fc0", LayerType::Linear, linear(32))
      .node("relu0", LayerType::ReLU)
      .node("fc1", LayerType::Linear, linear(32))
      .node("relu", LayerType::ReLU)
      .node("fc2", LayerType::Linear, linear(4))
      .node("loss", LayerType::SoftmaxCrossEntropy)
      .chain({"in", "fc0", "relu0", "fc1", "relu", "fc2", "loss"});
  return b.build();
}

// A vision transformer's block: patches, position embedding, class token,
// pre-norm attention (4 heads of 4) and MLP (16 -> 32 -> 16), each with its
// residual join, the class token's logits.
Project transformer(int64_t heads = 4, int64_t hidden = 32) {
  ModelBuilder b = synthetic_builder("tp-vit");
  LayerParams attn;
  attn.heads = heads;
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("patch", LayerType::Conv2d, conv(16, 2, 2, 2, 2, 0, 0, true))
      .node("pos", LayerType::PositionEmbedding)
      .node("cls", LayerType::ClassToken)
      .node("ln1", LayerType::LayerNorm)
      .node("attn", LayerType::MultiHeadSelfAttention, attn)
      .node("add1", LayerType::Add)
      .node("ln2", LayerType::LayerNorm)
      .node("fc1", LayerType::TokenLinear, linear(hidden))
      .node("gelu", LayerType::GELU)
      .node("fc2", LayerType::TokenLinear, linear(16))
      .node("add2", LayerType::Add)
      .node("pool", LayerType::TokenPool)
      .node("head", LayerType::Linear, linear(4))
      .node("loss", LayerType::SoftmaxCrossEntropy)
      .chain({"in", "patch", "pos", "cls", "ln1", "attn"})
      .edge("attn", "add1", 0)
      .edge("cls", "add1", 1)
      .chain({"add1", "ln2", "fc1", "gelu", "fc2"})
      .edge("fc2", "add2", 0)
      .edge("add1", "add2", 1)
      .chain({"add2", "pool", "head", "loss"});
  return b.build();
}

using Tensors = std::map<std::pair<std::string, std::string>, CheckpointTensor>;

Tensors tensors_of(const std::string& path) {
  Tensors out;
  for (const CheckpointTensor& t : read_checkpoint(path).tensors) out[{t.region, t.name}] = t;
  return out;
}

// Trains `p` with its final weights written, and returns them.
Tensors final_weights(const Project& p, std::vector<double>& losses) {
  QTemporaryDir dir;
  TrainOptions o;
  o.final_weights = dir.filePath("final.ckpt").toStdString();
  const rank_runs::Run r = run(p, o);
  losses = r.losses;
  return tensors_of(o.final_weights);
}

// Every loss and every final weight within `tolerance` (relative) of the reference's.
void compare_runs(const Project& test, const Project& reference, double tolerance) {
  std::vector<double> lt, lr;
  const Tensors wt = final_weights(test, lt), wr = final_weights(reference, lr);
  QCOMPARE(lt.size(), lr.size());
  QVERIFY(!lr.empty());
  for (size_t i = 0; i < lr.size(); ++i)
    QVERIFY2(std::abs(lt[i] - lr[i]) <= tolerance * std::abs(lr[i]),
             qPrintable(QString("step %1: loss %2 against %3").arg(i).arg(lt[i]).arg(lr[i])));
  QCOMPARE(wt.size(), wr.size());
  for (const auto& [key, t] : wr) {
    QVERIFY2(wt.count(key), key.second.c_str());
    const CheckpointTensor& u = wt.at(key);
    QVERIFY2(u.shape == t.shape,
             qPrintable(QString::fromStdString(key.second + ": " + u.shape.str() + " against " +
                                               t.shape.str())));
    const double d = relative_difference(u.values, t.values);
    QVERIFY2(d <= tolerance, qPrintable(QString("%1: %2").arg(key.second.c_str()).arg(d)));
  }
}

std::string refusal(const Project& p) {
  try {
    compile_project(p);
  } catch (const ProjectError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

class TestTensorParallel : public QObject {
  Q_OBJECT

 private slots:
  void splitsTheMegatronPairs() {
    const CompiledProject cp = compile_project(on(transformer(), 2, 2));
    QCOMPARE(cp.tensor_ranks, 2);
    QCOMPARE(cp.data_ranks(), 1);
    auto split_of = [&](const char* id) {
      const int v = cp.project.model.find(id);
      return v < 0 ? LayerSplit{} : cp.splits[static_cast<size_t>(v)];
    };
    QCOMPARE(split_of("attn.in_proj").split, TensorSplit::Column);
    QCOMPARE(split_of("attn.in_proj").blocks, 3);
    QCOMPARE(split_of("attn.attention").split, TensorSplit::Local);
    QCOMPARE(split_of("attn.out_proj").split, TensorSplit::Row);
    QCOMPARE(split_of("fc1").split, TensorSplit::Column);
    QCOMPARE(split_of("gelu").split, TensorSplit::Local);
    QCOMPARE(split_of("fc2").split, TensorSplit::Row);
    QCOMPARE(split_of("head").split, TensorSplit::Whole);
    QCOMPARE(split_of("patch").split, TensorSplit::Whole);
    // Each rank holds its half of the heads and of the MLP's features.
    const MemoryPlan& plan = cp.plans.front();
    const LayerTensors& fc1 = cp.layers[static_cast<size_t>(cp.project.model.find("fc1"))];
    const DTensor& w1 = plan.get_dtensor(fc1.weight_in(ParamSeries::W));
    QCOMPARE(w1.shape, (Shape{16, 1, 1, 16}));
    QCOMPARE(whole_shape(w1, 2), (Shape{32, 1, 1, 16}));
    QCOMPARE(w1.tensor_placement.str(), std::string("S(0)"));
    const LayerTensors& fc2 = cp.layers[static_cast<size_t>(cp.project.model.find("fc2"))];
    const DTensor& w2 = plan.get_dtensor(fc2.weight_in(ParamSeries::W));
    QCOMPARE(w2.shape, (Shape{16, 1, 1, 16}));
    QCOMPARE(w2.tensor_placement.str(), std::string("S(3)"));
    QCOMPARE(plan.get_dtensor(fc2.bias_in(ParamSeries::W)).tensor_placement.str(),
             std::string("R"));
    const int attention = cp.project.model.find("attn.attention");
    QCOMPARE(cp.project.model.nodes[static_cast<size_t>(attention)].params.heads, int64_t{2});
    // Sequence parallel: the whole layers' features hold the rank's 16
    // samples of the group's 32 (S(0)), the split ones the group's 32 for
    // the rank's channels (S(3)); a column layer's input is gathered (R),
    // a row layer's partial products are a pending sum (P).
    auto feature = [&](const char* id, DTensorId LayerTensors::*which) -> const DTensor& {
      return plan.get_dtensor(cp.layers[static_cast<size_t>(cp.project.model.find(id))].*which);
    };
    QCOMPARE(feature("ln2", &LayerTensors::out).shape.n, int64_t{16});
    QCOMPARE(feature("ln2", &LayerTensors::out).tensor_placement.str(), std::string("S(0)"));
    QCOMPARE(whole_shape(feature("ln2", &LayerTensors::out), 2).n, int64_t{32});
    QCOMPARE(feature("fc1", &LayerTensors::gathered).shape.n, int64_t{32});
    QCOMPARE(feature("fc1", &LayerTensors::gathered).tensor_placement.str(), std::string("R"));
    QCOMPARE(feature("fc1", &LayerTensors::out).shape, (Shape{32, 1, 17, 16}));
    QCOMPARE(feature("fc1", &LayerTensors::out).tensor_placement.str(), std::string("S(3)"));
    QCOMPARE(feature("fc2", &LayerTensors::partial).shape.n, int64_t{32});
    QCOMPARE(feature("fc2", &LayerTensors::partial).tensor_placement.str(), std::string("P"));
    QCOMPARE(feature("fc2", &LayerTensors::out).shape.n, int64_t{16});
    // Over the tensor ranks, a step: each column layer's input gathered in
    // the forward and again in the backward, each row layer's output
    // gradient gathered (6); the row layers' partial products and the
    // column layers' input gradients reduce-scattered (4); the whole
    // layers' parameter gradients summed (both LayerNorms' scale and shift,
    // the position embedding, the class token, the head's weight and bias: 8).
    std::map<RangeOp, int> over_tensor;
    for (const ComputationGraph& g : cp.graphs)
      if (g.id == GraphId::DEEP_FWD_BWD && g.variant == 0)
        for (const GraphNode& n : g.nodes)
          if (n.kind == NodeKind::RANGE && n.group == CommGroup::Tensor) ++over_tensor[n.range_op];
    QCOMPARE(over_tensor[RangeOp::ALLGATHER_BATCH], 6);
    QCOMPARE(over_tensor[RangeOp::REDUCE_SCATTER_BATCH], 4);
    QCOMPARE(over_tensor[RangeOp::ALLREDUCE_SUM], 8);
    QCOMPARE(over_tensor.size(), size_t{3});
    // The first layer's gradients too, in its own graph.
    const ComputationGraph* first = cp.find_graph(GraphId::FIRST_LAYER_BWD_A, 0);
    QVERIFY(first);
    QCOMPARE(first->nodes.back().range_op, RangeOp::ALLREDUCE_SUM);
    QCOMPARE(first->nodes.back().group, CommGroup::Tensor);
    // The ranks of a group agree on skipping an overflowed step: each
    // checks its own parts of the gradients, then the flag's maximum.
    const ComputationGraph* check = cp.find_graph(GraphId::NAN_CHECK_AND_GRAD_SCALING, 0);
    QVERIFY(check);
    bool agreed = false, checked = false;
    for (const GraphNode& n : check->nodes) {
      checked |= n.kind == NodeKind::RANGE && n.range_op == RangeOp::NAN_CHECK;
      agreed |= checked && n.range_op == RangeOp::ALLREDUCE_MAX && n.group == CommGroup::Tensor;
    }
    QVERIFY(agreed);
  }

  void planSaysHowEachLayerSplits() {
    const CompiledProject cp = compile_project(on(transformer(), 2, 2));
    const CompiledPlan plan(std::make_shared<const CompiledProject>(cp));
    const std::string text = plan_report_text(plan);
    for (const char* words :
         {"mesh data=1 x tensor=2", "tensor: row, its share of the inputs",
          "tensor: column, its ranks' heads of q, k and v", "tensor: its ranks' heads",
          "tensor: whole (convolutions stay replicated)", "R,S(0)", "tensor parallel: each rank"})
      QVERIFY2(text.find(words) != std::string::npos, words);
    const nlohmann::json j = plan_report_json(plan);
    QCOMPARE(j["mesh"]["tensor"].get<int>(), 2);
    QCOMPARE(j["mesh"]["data"].get<int>(), 1);
    QVERIFY(j["mesh"]["param_bytes_per_rank"].get<uint64_t>() <
            j["mesh"]["param_bytes_whole"].get<uint64_t>());
    // Sequence parallel: every feature held is split, half of one rank's
    // (but for each slot's rounding to 256 bytes).
    const double held = j["mesh"]["feature_bytes_per_rank"].get<double>() /
                        j["mesh"]["feature_bytes_whole"].get<double>();
    QVERIFY2(held > 0.5 && held < 0.52, qPrintable(QString::number(held)));
    QVERIFY(j["mesh"]["communication_bytes_per_rank"].get<uint64_t>() > 0);
    bool found = false;
    for (const auto& t : j["variants"][0]["tensors"])
      if (t["name"] == "fc1.weight" && t["region"] == "W_DEEP_CONV") {
        found = true;
        QCOMPARE(t["tensor_placement"].get<std::string>(), std::string("S(0)"));
        QCOMPARE(t["whole_shape"], nlohmann::json::array({32, 1, 1, 16}));
      }
    QVERIFY(found);
    // Each collective says what it carries and which layer causes it.
    const ComputationGraph* g = cp.find_graph(GraphId::DEEP_FWD_BWD, 0);
    QVERIFY(g);
    std::string causes;
    for (size_t i = 0; i < g->nodes.size(); ++i)
      if (g->nodes[i].group == CommGroup::Tensor)
        causes += plan.node(GraphId::DEEP_FWD_BWD, 0, static_cast<int>(i))->collective_cause + "\n";
    for (const char* words :
         {"column-parallel 'attn.in_proj''s input, gathered from the tensor ranks' samples\n",
          "partial products of row-parallel 'attn.out_proj' (bias from tensor rank 0), summed, "
          "each rank keeping its own samples",
          "row-parallel 'fc2''s output gradient, gathered",
          "column-parallel 'fc1''s input, gathered from the tensor ranks' samples again",
          "partial input gradients of column-parallel 'fc1', summed",
          "gradients of whole 'ln2''s ln2.weight, each of its own samples, summed"})
      QVERIFY2(causes.find(words) != std::string::npos, (words + ("\nin:\n" + causes)).c_str());
  }

  void aPartIsItsPlaceInTheWhole() {
    // A QKV projection's rows: 3 blocks (q, k, v) of 4, each split over 2 ranks.
    DTensor d;
    d.name = "qkv.weight";
    d.shape = {6, 1, 1, 2};
    d.tensor_placement = {PlacementKind::Shard, 0};
    d.tensor_blocks = 3;
    std::vector<float> whole(24);
    for (size_t i = 0; i < whole.size(); ++i) whole[i] = static_cast<float>(i);
    const std::vector<float> part1 = tensor_part(d, 2, 1, whole);
    // Rank 1 holds rows 2-3 of each block: rows 2, 3, 6, 7, 10, 11.
    const std::vector<float> expected{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23};
    QCOMPARE(part1, expected);
    std::vector<float> back;
    put_tensor_part(d, 2, 0, tensor_part(d, 2, 0, whole), back);
    put_tensor_part(d, 2, 1, part1, back);
    QCOMPARE(back, whole);
  }

  void mlpTrainsAsOneRank() { compare_runs(on(mlp(), 2, 2), on(mlp(), 1, 1), 1e-5); }

  void transformerTrainsAsOneRank_data() {
    QTest::addColumn<int>("precision");
    QTest::addColumn<double>("tolerance");
    QTest::addRow("fp32") << static_cast<int>(Precision::FP32) << 1e-5;
    // 16-bit features: the partial products are rounded before their sum.
    QTest::addRow("amp") << static_cast<int>(Precision::AMP) << 2e-2;
  }
  void transformerTrainsAsOneRank() {
    QFETCH(int, precision);
    QFETCH(double, tolerance);
    Project p = transformer();
    p.training.precision = static_cast<Precision>(precision);
    compare_runs(on(p, 2, 2), on(p, 1, 1), tolerance);
  }

  void meshOfTwoByTwoTrainsAsFourRanks() {
    compare_runs(on(transformer(), 4, 2), on(transformer(), 4, 1), 1e-5);
  }

  // A tensor-parallel project predicts on one rank from its whole weights.
  void predictsFromTheWholeWeights() {
    QTemporaryDir dir;
    TrainOptions o;
    o.final_weights = dir.filePath("final.ckpt").toStdString();
    o.max_steps = 2;
    const Project tp = on(transformer(), 2, 2);
    run(tp, o);
    const Checkpoint weights = read_checkpoint(o.final_weights);
    std::vector<uint8_t> px(64);
    for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 4);
    const std::string image = dir.filePath("x.png").toStdString();
    tr::test::write_png(image, 8, 8, 1, px);
    const PredictReport a = predict_images(tp, weights, {{image, -1}});
    const PredictReport b = predict_images(on(transformer(), 1, 1), weights, {{image, -1}});
    QCOMPARE(a.predictions.size(), size_t{1});
    QVERIFY2(a.predictions[0].error.empty(), a.predictions[0].error.c_str());
    QCOMPARE(a.predictions[0].logits.size(), size_t{4});
    QCOMPARE(a.predictions[0].logits, b.predictions[0].logits);
  }

  void checkpointsResumeOnAnotherMesh() {
    // Half an epoch on a 2x2 mesh, the rest on one rank: the same losses
    // as one rank all the way, to reduction order.
    QTemporaryDir dir;
    TrainOptions first;
    first.checkpoint_dir = dir.path().toStdString();
    first.max_steps = 4;
    const rank_runs::Run a = run(on(transformer(), 4, 2), first);
    QCOMPARE(a.losses.size(), size_t{4});
    const QStringList files = QDir(dir.path()).entryList({"*.ckpt"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    TrainOptions rest;
    rest.resume =
        std::make_shared<Checkpoint>(read_checkpoint(dir.filePath(files.front()).toStdString()));
    rest.resume_source = "half";
    const rank_runs::Run b = run(on(transformer(), 1, 1), rest);
    const rank_runs::Run whole = run(on(transformer(), 1, 1));
    QCOMPARE(a.losses.size() + b.losses.size(), whole.losses.size());
    for (size_t i = 0; i < b.losses.size(); ++i)
      QVERIFY2(std::abs(b.losses[i] - whole.losses[i + 4]) <= 1e-4 * whole.losses[i + 4],
               qPrintable(QString("step %1: %2 against %3")
                              .arg(i + 4)
                              .arg(b.losses[i])
                              .arg(whole.losses[i + 4])));
  }

  void refusesWhatCannotSplit() {
    // Heads that do not divide: named with the numbers.
    std::string why = refusal(on(transformer(2), 4, 4));
    QVERIFY2(why.find("'attn'") != std::string::npos && why.find("2 heads") != std::string::npos &&
                 why.find("tensor=4") != std::string::npos,
             why.c_str());
    // Features that do not divide.
    why = refusal(on(transformer(4, 30), 4, 4));
    QVERIFY2(why.find("'fc1'") != std::string::npos && why.find("30 output") != std::string::npos,
             why.c_str());
    // A model with nothing to split.
    why = refusal(on(rank_runs::synthetic(2, true), 2, 2));
    QVERIFY2(why.find("no layer of the model splits") != std::string::npos, why.c_str());
    // LARS: its norms are of whole layers.
    Project lars = on(transformer(), 2, 2);
    lars.training.optimizer.kind = OptimizerKind::LARS;
    why = refusal(lars);
    QVERIFY2(why.find("optimizer \"lars\" with mesh tensor=2") != std::string::npos, why.c_str());
    // Sharding as well.
    Project zero = on(transformer(), 4, 2);
    zero.training.sharding = Sharding::Optimizer;
    why = refusal(zero);
    QVERIFY2(why.find("sharding \"optimizer\" with mesh tensor=2") != std::string::npos,
             why.c_str());
    // Devices the mesh does not divide (the toolbar's choice after the file's).
    why = refusal(on(transformer(), 1, 2));
    QVERIFY2(why.find("mesh tensor=2 does not divide the 1 ranks of cpu:1") != std::string::npos,
             why.c_str());
    // A mesh that does not divide the devices, said where the file says it.
    Project p = on(transformer(), 4, 1);
    p.training.tensor_ranks = 3;
    const std::string text = project_to_json(p);
    std::vector<Diagnostic> problems;
    try {
      parse_project(text, "mesh.json");
    } catch (const ProjectError& e) {
      problems = e.diagnostics();
    }
    QVERIFY(!problems.empty());
    QCOMPARE(problems.front().field, std::string("training.mesh.tensor"));
    QVERIFY2(
        problems.front().message.find("tensor=3 does not divide the 4 ranks") != std::string::npos,
        problems.front().message.c_str());
  }
};

QTEST_GUILESS_MAIN(TestTensorParallel)
#include "test_tensor_parallel.moc"

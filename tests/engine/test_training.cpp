// SPDX-License-Identifier: GPL-3.0-or-later
// End-to-end training on the CPU backend: the step schedule over captured
// graphs learns, the last partial batch runs through its own variant without
// recapturing shared graphs, a seed reproduces the curve bit for bit, a stop
// request ends training within a step, max_steps ends it as an epoch end
// would, and profiling sees the streams and the step of every span.
#include <QtTest>
#include <chrono>
#include <thread>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include <renaissance/checkpoint.h>
#include <renaissance/devices.h>
#include <renaissance/predict.h>
#include <renaissance/profile_export.h>
#include <renaissance/project_io.h>
#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "model_builder.h"
#include "png_files.h"
#include "runtime/trainer.h"
#include "runtime/training_session.h"
#include "setup/training_setup.h"

using namespace tr;

namespace {

// A small BN CNN on learnable synthetic 8x8 data; 1000 training samples in
// batches of 64 leave a partial last batch of 40.
Project small_project(bool dropout = false) {
  ModelBuilder b;
  b.synthetic_data(8, 8, 1, 4, 1000, 200, 100);
  Project& p = b.project();
  p.training.global_batch = 64;
  p.training.epochs = 3;
  p.training.optimizer.lr = 0.05;
  p.training.seed = 7;
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
      .node("bn1", LayerType::BatchNorm2d)
      .node("relu1", LayerType::ReLU)
      .node("pool1", LayerType::MaxPool2d, pool(2, 2))
      .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, false))
      .node("bn2", LayerType::BatchNorm2d)
      .node("add", LayerType::Add)
      .node("relu2", LayerType::ReLU);
  if (dropout) b.node("drop", LayerType::Dropout);
  b.node("fc", LayerType::Linear, linear(4)).node("loss", LayerType::SoftmaxCrossEntropy);
  b.chain({"in", "conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "add", "relu2"})
      .edge("pool1", "add", 1);
  if (dropout)
    b.chain({"relu2", "drop", "fc", "loss"});
  else
    b.chain({"relu2", "fc", "loss"});
  return b.build();
}

// The compiler's fusions and in-place gradients off (`pack`: and packing).
CompileOptions unfused(bool pack = true) {
  CompileOptions o;
  o.fuse_bn_relu = o.fuse_add_relu = o.in_place_dx = false;
  o.pack_memory = pack;
  return o;
}

struct Run {
  TrainReport report;
  std::vector<double> losses;
};

Run run(const Project& p, const TrainOptions& options = {}, const CompileOptions& compile = {}) {
  const CompiledProject cp = compile_project(p, compile);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  auto backend = cpu::make_cpu_backend({cp.world_size, true});
  Run r;
  TrainCallbacks cb;
  cb.on_step = [&](const StepReport& s) { r.losses.push_back(s.loss); };
  r.report = train(cp, *backend, *data, options, cb);
  return r;
}

// The two runs' losses agree step for step (to 1e-5, relative); says where not.
bool same_losses(const Run& a, const Run& b, const char* what) {
  if (a.losses.size() != b.losses.size()) {
    qWarning("%s: %zu steps against %zu", what, a.losses.size(), b.losses.size());
    return false;
  }
  for (size_t i = 0; i < a.losses.size(); ++i)
    if (std::fabs(a.losses[i] - b.losses[i]) > 1e-5 * std::fabs(b.losses[i])) {
      qWarning("%s, step %zu: %.9g against %.9g", what, i, a.losses[i], b.losses[i]);
      return false;
    }
  return true;
}

// The last epoch's training loss is below `factor` times the first's, and its
// validation top-1 above `top1`.
bool learns(const Run& r, double factor, double top1, const char* what) {
  const EpochReport& first = r.report.epochs.front();
  const EpochReport& last = r.report.epochs.back();
  if (last.train_loss < factor * first.train_loss && last.val_top1 > top1) return true;
  qWarning("%s: loss %g -> %g, top-1 %g", what, first.train_loss, last.train_loss, last.val_top1);
  return false;
}

// The model `build` writes, on small_project's data and settings, learns in
// FP32, AMP and BF16, and the 16-bit runs' first losses are within 2% of FP32's.
void trains_at_every_precision(const std::function<void(ModelBuilder&)>& build) {
  std::vector<double> first_loss;
  for (Precision precision : {Precision::FP32, Precision::AMP, Precision::BF16}) {
    ModelBuilder b;
    b.project() = small_project();
    b.project().model = {};
    build(b);
    Project p = b.build();
    p.training.precision = precision;
    const Run r = run(p);
    const char* name = precision_name(precision).data();
    QVERIFY(learns(r, 0.9, 0.3, name));
    first_loss.push_back(r.losses.front());
  }
  for (double l : first_loss)
    QVERIFY2(std::fabs(l - first_loss[0]) < 2e-2 * first_loss[0],
             qPrintable(QString("%1 against FP32's %2").arg(l).arg(first_loss[0])));
}

// A transformer block on a 4x4 patch grid: a position embedding and a class
// token, LayerNorm, a TokenLinear to queries, keys and values, two-head
// SelfAttention, a TokenLinear back and a residual Add; with `mlp`, a second
// LayerNorm, a GELU MLP and its Add; the class token pooled into 4 classes.
// `dropout`: the attention's dropout on its probabilities. `one_layer`: the
// projections and the attention are one MultiHeadSelfAttention 'mhsa';
// otherwise three layers named as its parts are.
void transformer_block(ModelBuilder& b, bool mlp, double dropout = 0.0, bool one_layer = false) {
  LayerParams attn;
  attn.heads = 2;
  attn.attention_dropout = dropout;
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("patch", LayerType::Conv2d, conv(16, 2, 2, 2, 2, 0, 0, true))
      .node("pos", LayerType::PositionEmbedding)
      .node("cls", LayerType::ClassToken)
      .node("ln1", LayerType::LayerNorm)
      .chain({"in", "patch", "pos", "cls", "ln1"});
  const char* attended = "mhsa";
  if (one_layer) {
    b.node("mhsa", LayerType::MultiHeadSelfAttention, attn).chain({"ln1", "mhsa"});
  } else {
    b.node("mhsa.in_proj", LayerType::TokenLinear, linear(48))
        .node("mhsa.attention", LayerType::SelfAttention, attn)
        .node("mhsa.out_proj", LayerType::TokenLinear, linear(16))
        .chain({"ln1", "mhsa.in_proj", "mhsa.attention", "mhsa.out_proj"});
    attended = "mhsa.out_proj";
  }
  b.node("add1", LayerType::Add).edge(attended, "add1", 0).edge("cls", "add1", 1);
  const char* last = "add1";
  if (mlp) {
    b.node("ln2", LayerType::LayerNorm)
        .node("fc1", LayerType::TokenLinear, linear(32))
        .node("gelu", LayerType::GELU)
        .node("fc2", LayerType::TokenLinear, linear(16))
        .node("add2", LayerType::Add)
        .chain({"add1", "ln2", "fc1", "gelu", "fc2"})
        .edge("fc2", "add2", 0)
        .edge("add1", "add2", 1);
    last = "add2";
  }
  b.node("pool", LayerType::TokenPool)
      .node("fc", LayerType::Linear, linear(4))
      .node("loss", LayerType::SoftmaxCrossEntropy)
      .chain({last, "pool", "fc", "loss"});
}

}  // namespace

class TestTraining : public QObject {
  Q_OBJECT

 private slots:
  void learnsAndValidates() {
    const Run r = run(small_project());
    QCOMPARE(r.report.epochs.size(), size_t{3});
    QCOMPARE(r.report.steps, int64_t{3 * 16});  // 15 full batches and one of 40, per epoch
    const EpochReport& first = r.report.epochs.front();
    const EpochReport& last = r.report.epochs.back();
    QVERIFY(first.validated && last.validated);
    QVERIFY2(last.train_loss < first.train_loss, qPrintable(QString::number(last.train_loss)));
    QVERIFY2(last.val_top1 > 0.6, qPrintable(QString::number(last.val_top1)));
    QVERIFY(last.val_loss < std::log(4.0));  // better than guessing
    for (double l : r.losses) QVERIFY(std::isfinite(l));
    // The confusion matrix counts every validation sample once; its diagonal is top-1.
    for (const EpochReport& e : r.report.epochs) {
      QCOMPARE(e.confusion.size(), size_t{16});
      int64_t all = 0, diagonal = 0;
      for (size_t i = 0; i < 16; ++i) {
        all += e.confusion[i];
        if (i % 5 == 0) diagonal += e.confusion[i];
      }
      QCOMPARE(all, int64_t{200});
      QCOMPARE(static_cast<double>(diagonal) / 200.0, e.val_top1);
    }
  }

  void fusionAndInPlaceGradientsTrainLikeThePlainProgram() {
    // conv-bn-relu-conv-bn-relu-gap-fc: both BN+ReLU pairs fuse, the first
    // ReLU's and the pool's gradients go in place (their consumers are a conv
    // and the FC layer).
    Project p = small_project();
    ModelBuilder b;
    b.project() = p;
    b.project().model = {};
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 2, 2, 1, 1, false))
        .node("bn2", LayerType::BatchNorm2d)
        .node("relu2", LayerType::ReLU)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1", "bn1", "relu1", "conv2", "bn2", "relu2", "gap", "fc", "loss"});
    p = b.build();
    const CompiledProject rewritten = compile_project(p);
    QVERIFY(rewritten.layers[3].fused_into == 2 && rewritten.layers[3].grad_in_place);
    QVERIFY(rewritten.bytes_per_device() < compile_project(p, unfused()).bytes_per_device());
    TrainOptions o;
    o.epochs = 1;
    const Run fused = run(p, o);
    const Run plain = run(p, o, unfused());
    QCOMPARE(fused.losses.size(), plain.losses.size());
    for (size_t i = 0; i < plain.losses.size(); ++i)
      QVERIFY2(std::fabs(fused.losses[i] - plain.losses[i]) <= 1e-5 * std::fabs(plain.losses[i]),
               qPrintable(QString("step %1: %2 vs %3")
                              .arg(i)
                              .arg(fused.losses[i], 0, 'g', 9)
                              .arg(plain.losses[i], 0, 'g', 9)));
    QVERIFY(fused.losses.back() < fused.losses.front());
    QCOMPARE(fused.report.epochs.back().val_top1, plain.report.epochs.back().val_top1);
  }

  // conv-LayerNorm-GELU-pool-conv-LayerNorm-gap-fc learns in FP32, AMP and
  // BF16 (the CPU backend's schedule checker on), and the 16-bit runs start
  // where FP32 does.
  void layerNormTrainsAtEveryPrecision() {
    trains_at_every_precision([](ModelBuilder& b) {
      b.node("in", LayerType::Input, input(8, 8, 1))
          .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
          .node("ln1", LayerType::LayerNorm)
          .node("gelu", LayerType::GELU)
          .node("pool", LayerType::MaxPool2d, pool(2, 2))
          .node("conv2", LayerType::Conv2d, conv(12, 3, 3, 1, 1, 1, 1, true))
          .node("ln2", LayerType::LayerNorm)
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(4))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"in", "conv1", "ln1", "gelu", "pool", "conv2", "ln2", "gap", "fc", "loss"});
    });
  }

  // A transformer block on a 4x4 patch grid (a position embedding and a
  // class token, LayerNorm, a TokenLinear to queries, keys and values,
  // two-head SelfAttention, a TokenLinear back, a residual Add, the class
  // token pooled) learns in FP32, AMP and BF16 (the CPU backend's schedule
  // checker on), and the 16-bit runs start where FP32 does.
  void attentionBlockTrainsAtEveryPrecision() {
    trains_at_every_precision([](ModelBuilder& b) { transformer_block(b, false); });
  }

  // Attention dropout drops probabilities in training (the first loss is not
  // the one without it, from the same weights and batch), the model still
  // learns, and inference leaves it out: the trained weights classify an
  // image the same with the project's dropout and with none.
  void attentionDropoutTrainsAndInferenceLeavesItOut() {
    const auto project = [](double dropout) {
      ModelBuilder b;
      b.project() = small_project();
      b.project().model = {};
      transformer_block(b, true, dropout);
      return b.build();
    };
    const Project dropping = project(0.3), plain = project(0.0);
    QTemporaryDir dir;
    TrainOptions options;
    options.final_weights = dir.filePath("final.ckpt").toStdString();
    const Run a = run(dropping, options);
    const Run b = run(plain);
    QVERIFY2(a.losses.front() != b.losses.front(),
             qPrintable(QString("the first loss is %1 with dropout and without").arg(a.losses[0])));
    QVERIFY(learns(a, 0.9, 0.3, "attention dropout 0.3"));
    const std::string image = dir.filePath("image.png").toStdString();
    tr::test::write_png(image, 8, 8, 1, tr::test::pattern(8, 8, 1, 11));
    const Checkpoint weights = read_checkpoint(options.final_weights);
    const PredictReport with = predict_images(dropping, weights, {{image}}, 4);
    const PredictReport without = predict_images(plain, weights, {{image}}, 4);
    QCOMPARE(with.predictions.at(0).logits.size(), size_t{4});
    QCOMPARE(with.predictions.at(0).logits, without.predictions.at(0).logits);
  }

  // One MultiHeadSelfAttention is compiled as its three parts, in its place:
  // the same plan, the same weights (named after the parts, in the W/G/M
  // regions of a TokenLinear) and the same training bit for bit, dropout
  // included, as the three layers; checkpoints and runs keep the one layer,
  // and either project predicts from the other's weights.
  void multiHeadSelfAttentionIsItsPartsBitForBit() {
    const auto project = [](bool one_layer) {
      ModelBuilder b;
      b.project() = small_project();
      b.project().model = {};
      b.project().training.epochs = 1;
      transformer_block(b, true, 0.2, one_layer);
      return b.build();
    };
    const Project one = project(true), three = project(false);
    QCOMPARE(one.model.nodes.size() + 2, three.model.nodes.size());
    const CompiledProject a = compile_project(one), b = compile_project(three);
    QCOMPARE(a.bytes_per_device(), b.bytes_per_device());
    QCOMPARE(a.project.model.nodes.size(), three.model.nodes.size());
    for (size_t v = 0; v < three.model.nodes.size(); ++v) {
      const LayerNode& part = a.project.model.nodes[v];
      QCOMPARE(part.id, three.model.nodes[v].id);
      QCOMPARE(part.type, three.model.nodes[v].type);
      QCOMPARE(part.params, three.model.nodes[v].params);
      QCOMPARE(part.design_id(), part.id.starts_with("mhsa.") ? std::string("mhsa") : part.id);
    }
    std::vector<std::string> names_a, names_b;
    for (const DTensor& t : a.plans.front().dtensors()) names_a.push_back(t.name);
    for (const DTensor& t : b.plans.front().dtensors()) names_b.push_back(t.name);
    QCOMPARE(names_a, names_b);
    QCOMPARE(a.plans.front().get_dtensor(a.layers[5].weight_in(ParamSeries::W)).name,
             std::string("mhsa.in_proj.weight"));
    QTemporaryDir dir;
    TrainOptions options;
    options.final_weights = dir.filePath("one.ckpt").toStdString();
    const Run ra = run(one, options);
    const Run rb = run(three);
    QCOMPARE(ra.losses.size(), rb.losses.size());
    for (size_t i = 0; i < ra.losses.size(); ++i) QCOMPARE(ra.losses[i], rb.losses[i]);
    const Checkpoint weights = read_checkpoint(options.final_weights);
    const Project saved = parse_project(weights.project_json, "the checkpoint");
    QCOMPARE(saved.model.nodes.size(), one.model.nodes.size());
    for (size_t v = 0; v < one.model.nodes.size(); ++v) {
      QCOMPARE(saved.model.nodes[v].id, one.model.nodes[v].id);
      QCOMPARE(saved.model.nodes[v].type, one.model.nodes[v].type);
      QCOMPARE(saved.model.nodes[v].params, one.model.nodes[v].params);
    }
    const std::string image = dir.filePath("image.png").toStdString();
    tr::test::write_png(image, 8, 8, 1, tr::test::pattern(8, 8, 1, 5));
    QCOMPARE(predict_images(one, weights, {{image}}, 4).predictions.at(0).logits,
             predict_images(three, weights, {{image}}, 4).predictions.at(0).logits);
  }

  // A pre-norm transformer block with its GELU MLP: the LayerNorms' and the
  // GELU's outputs, read only by TokenLinears, are computed again in the
  // backward instead of kept. The plan is smaller and the losses are the
  // plain program's bit for bit (the same kernel on the same input).
  // Under a memory budget the planner drops batch-norm outputs that only
  // convolutions read, and convolution outputs that only batch norms read,
  // and runs those forwards again in the backward (a convolution's from its
  // input, itself recomputed where it was dropped): the same kernels on the
  // same inputs, so the same losses bit for bit, in FP32 and BF16, and with
  // SyncBatchNorm over two ranks (whose statistics are summed again across
  // the ranks); the CPU backend's step-schedule checker is on in every run.
  void budgetRecomputesBatchNormBitForBit() {
    ModelBuilder b;
    b.project() = small_project();
    b.project().model = {};
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, false))
        .node("bn2", LayerType::BatchNorm2d)
        .node("conv3", LayerType::Conv2d, conv(8, 3, 3, 2, 2, 1, 1, false))
        .node("bn3", LayerType::BatchNorm2d)
        .node("relu3", LayerType::ReLU)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1", "bn1", "relu1", "conv2", "bn2", "conv3", "bn3", "relu3", "gap", "fc",
                "loss"});
    Project p = b.build();
    const CompiledProject plain = compile_project(p);
    // bn1 (with its fused ReLU) and bn2 (alone) feed convolutions, bn3 the
    // pooling; conv2 and conv3 feed batch norms, conv1 is the first layer.
    std::set<std::string> candidates;
    for (const RecomputeChoice& c : plain.recompute_candidates) candidates.insert(c.layer);
    QCOMPARE(candidates, (std::set<std::string>{"bn1", "bn2", "conv2", "conv3"}));
    // The batch norms cost fewer FLOPs a byte than the convolutions.
    QCOMPARE(plain.recompute_candidates[0].layer.substr(0, 2), std::string("bn"));
    QCOMPARE(plain.recompute_candidates[2].layer.substr(0, 4), std::string("conv"));
    QVERIFY(plain.recomputed.empty());
    // A budget just under the plan: the fewest recomputations that fit.
    CompileOptions under;
    under.memory_budget = plain.bytes_per_device() - 1;
    const CompiledProject one = compile_project(p, under);
    QVERIFY2(one.bytes_per_device() <= under.memory_budget,
             qPrintable(QString("%1 bytes").arg(one.bytes_per_device())));
    QVERIFY(!one.recomputed.empty());
    // A budget nothing meets: the smallest plan the search saw, which says
    // it is over.
    CompileOptions tiny;
    tiny.memory_budget = 1;
    const CompiledProject least = compile_project(p, tiny);
    QVERIFY(!least.recomputed.empty());
    QVERIFY(least.bytes_per_device() <= one.bytes_per_device());
    QVERIFY(!CompiledPlan(std::make_shared<CompiledProject>(least)).fits_budget());
    // The project's own budget (training.memory_budget_mib) is the same search.
    Project budgeted = p;
    budgeted.training.memory_budget_mib = 1;
    const CompiledProject own = compile_project(budgeted);
    QCOMPARE(own.options.memory_budget, uint64_t{1} << 20);
    CompileOptions mib;
    mib.memory_budget = uint64_t{1} << 20;
    QCOMPARE(own.bytes_per_device(), compile_project(p, mib).bytes_per_device());
    QCOMPARE(own.recomputed.size(), compile_project(p, mib).recomputed.size());
    // Every candidate, pinned by hand.
    CompileOptions every;
    for (const RecomputeChoice& c : plain.recompute_candidates)
      every.recompute_layers.push_back(c.layer);
    const CompiledProject all = compile_project(p, every);
    QCOMPARE(all.recomputed.size(), size_t{4});
    QVERIFY(all.layers[3].recomputed != kNoTensor);  // relu1's output, bn1's kernel
    QCOMPARE(all.layers[2].recomputed, all.layers[3].recomputed);
    QVERIFY(all.layers[5].recomputed != kNoTensor);
    QVERIFY(all.layers[4].recomputed != kNoTensor && all.layers[6].recomputed != kNoTensor);
    // conv2's and conv3's dX go over the recomputed copies they read.
    QCOMPARE(all.layers[3].grad, all.layers[3].recomputed);
    QCOMPARE(all.layers[5].grad, all.layers[5].recomputed);

    TrainOptions o;
    o.epochs = 1;
    for (Precision precision : {Precision::FP32, Precision::BF16}) {
      p.training.precision = precision;
      const Run kept = run(p, o);
      const Run again = run(p, o, every);
      QCOMPARE(again.losses.size(), kept.losses.size());
      for (size_t i = 0; i < kept.losses.size(); ++i) QCOMPARE(again.losses[i], kept.losses[i]);
      QCOMPARE(again.report.epochs.back().val_loss, kept.report.epochs.back().val_loss);
      QCOMPARE(again.report.epochs.back().val_top1, kept.report.epochs.back().val_top1);
      QVERIFY(kept.losses.back() < kept.losses.front());
    }
    p.training.precision = Precision::FP32;
    p.training.devices = {DeviceKind::CPU, {0, 1}};
    p.training.sync_batch_norm = true;
    const Run kept = run(p, o);
    const Run again = run(p, o, every);
    QCOMPARE(again.losses.size(), kept.losses.size());
    for (size_t i = 0; i < kept.losses.size(); ++i) QCOMPARE(again.losses[i], kept.losses[i]);

    // A batch norm read by max pooling: the pooling's backward reads the copy
    // (small_project: conv1-bn1-relu1-pool1, then a residual join).
    const Project pooled = small_project();
    const CompiledProject pooled_plan = compile_project(pooled);
    CompileOptions pooled_all;
    for (const RecomputeChoice& c : pooled_plan.recompute_candidates)
      pooled_all.recompute_layers.push_back(c.layer);
    QVERIFY(std::find(pooled_all.recompute_layers.begin(), pooled_all.recompute_layers.end(),
                      "bn1") != pooled_all.recompute_layers.end());
    const Run pooled_kept = run(pooled, o);
    const Run pooled_again = run(pooled, o, pooled_all);
    QCOMPARE(pooled_again.losses.size(), pooled_kept.losses.size());
    for (size_t i = 0; i < pooled_kept.losses.size(); ++i)
      QCOMPARE(pooled_again.losses[i], pooled_kept.losses[i]);

    // A layer named by hand that is not a candidate is refused, by name.
    CompileOptions wrong;
    wrong.recompute_layers = {"bn3"};
    try {
      compile_project(p, wrong);
      QFAIL("bn3 was accepted");
    } catch (const ProjectError& e) {
      QVERIFY(std::string(e.what()).find("'bn3' cannot be recomputed") != std::string::npos);
    }
  }

  // Max pooling after a fused BN+ReLU keeps where its maxima were (INT8)
  // instead of its input, whose bytes then go at the forward: a smaller plan
  // and the same training bit for bit, in FP32 and BF16.
  // Feature maps in channel blocks (CompileOptions::channel_block, the layout
  // of oneDNN's direct convolutions): the maps every op on them takes blocked
  // are, the rest stay NHWC, the bytes are the same, and training follows
  // the NHWC run (the convolutions are oneDNN's kernels for the layout: the
  // same values within rounding, not always the same bits).
  void channelBlocksTrainAsNhwc() {
    ModelBuilder b;
    b.project() = small_project();
    b.project().model = {};
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("pool1", LayerType::MaxPool2d, pool(2, 2))
        .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, false))
        .node("bn2", LayerType::BatchNorm2d)
        .node("add", LayerType::Add)
        .node("relu2", LayerType::ReLU)
        .node("conv3", LayerType::Conv2d, conv(16, 1, 1, 2, 2, 0, 0, false))
        .node("bn3", LayerType::BatchNorm2d)
        .node("relu3", LayerType::ReLU)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "add", "relu2", "conv3",
                "bn3", "relu3", "gap", "fc", "loss"})
        .edge("pool1", "add", 1);
    const Project p = b.build();
    const CompiledProject plain = compile_project(p);
    CompileOptions blocked_options;
    blocked_options.channel_block = 8;
    const CompiledProject blocked = compile_project(p, blocked_options);
    QCOMPARE(blocked.bytes_per_device(), plain.bytes_per_device());
    std::map<std::string, int> block;
    for (const DTensor& t : blocked.plans.front().dtensors()) block[t.name] = t.channel_block;
    for (const char* name : {"conv1.out", "relu1.out", "pool1.out", "conv2.out", "relu2.out",
                             "conv3.out", "relu3.out"})
      QVERIFY2(block.at(name) == 8, name);
    // The Linear takes no blocks; global pooling's output lies alike either way.
    QCOMPARE(block.at("fc.out"), 0);
    QCOMPARE(block.at("gap.out"), 0);
    for (const DTensor& t : plain.plans.front().dtensors()) QCOMPARE(t.channel_block, 0);
    // CUDA plans never take them (cuDNN's NHWC kernels).
    Project on_cuda = p;
    on_cuda.training.devices = {DeviceKind::CUDA, {0}};
    const CompiledProject cuda_plan = compile_project(on_cuda, blocked_options);
    for (const DTensor& t : cuda_plan.plans.front().dtensors()) QCOMPARE(t.channel_block, 0);
    // The project's own setting (training.feature_layout) reaches the plan
    // the training setup compiles, the workbench's way in; unasked, none.
    if (cpu_channel_block() > 0) {
      Project asked = p;
      asked.training.feature_layout = FeatureLayout::Blocked;
      for (const Project* q : {&p, static_cast<const Project*>(&asked)}) {
        const TrainingSetup s = prepare_training(*q);
        const int want = q == &asked ? cpu_channel_block() : 0;
        for (const DTensor& t : s.compiled->plans.front().dtensors())
          if (t.name == "conv1.out") QCOMPARE(static_cast<int>(t.channel_block), want);
      }
    }

    TrainOptions o;
    o.epochs = 1;
    const Run a = run(p, o);
    const Run c = run(p, o, blocked_options);
    QCOMPARE(c.losses.size(), a.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i)
      QVERIFY2(
          std::fabs(c.losses[i] - a.losses[i]) <= 1e-4 * std::max(1.0, std::fabs(a.losses[i])),
          qPrintable(QString("step %1: %2 against %3").arg(i).arg(c.losses[i]).arg(a.losses[i])));
    QVERIFY(std::fabs(c.report.epochs.back().val_loss - a.report.epochs.back().val_loss) <=
            1e-3 * a.report.epochs.back().val_loss);
    QVERIFY(a.losses.back() < a.losses.front());

    // The host reads a blocked map back in NHWC order (TrainingSession::read_tensor):
    // conv3's output (two blocks) after one step, each tensor in bytes of its own.
    auto conv3_out = [&](CompileOptions options) {
      options.pack_memory = false;
      const CompiledProject cp = compile_project(p, options);
      auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
      auto backend = cpu::make_cpu_backend({cp.world_size, true});
      DTensorId id = kNoTensor;
      for (const DTensor& t : cp.plans.front().dtensors())
        if (t.name == "conv3.out") id = t.id;
      std::vector<float> out;
      TrainCallbacks cb;
      cb.on_rank_step = [&](int rank, const StepReport&, TrainingSession& session) {
        if (rank == 0 && out.empty()) out = session.read_tensor(0, id);
      };
      TrainOptions one;
      one.max_steps = 1;
      one.validate = false;
      train(cp, *backend, *data, one, cb);
      return out;
    };
    const std::vector<float> nhwc = conv3_out({}), from_blocks = conv3_out(blocked_options);
    QCOMPARE(from_blocks.size(), nhwc.size());
    for (size_t i = 0; i < nhwc.size(); ++i)
      QVERIFY2(
          std::fabs(from_blocks[i] - nhwc[i]) <= 1e-5f * std::max(1.0f, std::fabs(nhwc[i])),
          qPrintable(QString("element %1: %2 against %3").arg(i).arg(from_blocks[i]).arg(nhwc[i])));
  }

  void maxPoolingFromWhereTrainsBitForBit() {
    Project p = small_project();
    const CompiledProject where = compile_project(p);
    CompileOptions keep;
    keep.pool_where = false;
    const CompiledProject kept = compile_project(p, keep);
    const int pool = p.model.find("pool1");
    QVERIFY(where.layers[static_cast<size_t>(pool)].mask != kNoTensor);
    QCOMPARE(where.plans[0].get_dtensor(where.layers[static_cast<size_t>(pool)].mask).dtype,
             DType::INT8);
    QCOMPARE(kept.layers[static_cast<size_t>(pool)].mask, kNoTensor);
    QVERIFY2(where.bytes_per_device() < kept.bytes_per_device(),
             qPrintable(QString("%1 bytes keeping where, %2 keeping the input")
                            .arg(where.bytes_per_device())
                            .arg(kept.bytes_per_device())));
    TrainOptions o;
    o.epochs = 1;
    for (Precision precision : {Precision::FP32, Precision::BF16}) {
      p.training.precision = precision;
      const Run a = run(p, o);
      const Run b = run(p, o, keep);
      QCOMPARE(a.losses.size(), b.losses.size());
      for (size_t i = 0; i < a.losses.size(); ++i) QCOMPARE(a.losses[i], b.losses[i]);
      QCOMPARE(a.report.epochs.back().val_loss, b.report.epochs.back().val_loss);
    }
  }

  void recomputedOutputsTrainBitForBit() {
    ModelBuilder b;
    b.project() = small_project();
    b.project().model = {};
    transformer_block(b, true);
    const Project p = b.build();
    const CompiledProject rewritten = compile_project(p);
    CompileOptions no_recompute;
    no_recompute.recompute = false;
    const CompiledProject kept = compile_project(p, no_recompute);
    int recomputed = 0;
    for (size_t v = 0; v < p.model.nodes.size(); ++v)
      if (rewritten.layers[v].recomputed != kNoTensor) {
        ++recomputed;
        const LayerType t = p.model.nodes[v].type;
        QVERIFY(t == LayerType::LayerNorm || t == LayerType::GELU);
      }
    QCOMPARE(recomputed, 3);
    QVERIFY2(rewritten.bytes_per_device() < kept.bytes_per_device(),
             qPrintable(QString("%1 bytes recomputing, %2 keeping")
                            .arg(rewritten.bytes_per_device())
                            .arg(kept.bytes_per_device())));
    const Run a = run(p);
    const Run plain = run(p, {}, no_recompute);
    QCOMPARE(a.losses.size(), plain.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i) QCOMPARE(a.losses[i], plain.losses[i]);
    QVERIFY(a.losses.back() < a.losses.front());

    // With the matrix products: the queries, keys and values and the MLP's
    // hidden layer too (each from a recomputed LayerNorm of a kept tensor),
    // still bit for bit.
    CompileOptions matmuls;
    matmuls.recompute_matmuls = true;
    const CompiledProject more = compile_project(p, matmuls);
    std::set<std::string> again;
    for (size_t v = 0; v < p.model.nodes.size(); ++v)
      if (more.layers[v].recomputed != kNoTensor) again.insert(p.model.nodes[v].id);
    QCOMPARE(again, (std::set<std::string>{"ln1", "mhsa.in_proj", "ln2", "fc1", "gelu"}));
    QVERIFY2(more.bytes_per_device() < rewritten.bytes_per_device(),
             qPrintable(QString("%1 bytes with the matrix products, %2 without")
                            .arg(more.bytes_per_device())
                            .arg(rewritten.bytes_per_device())));
    const Run m = run(p, {}, matmuls);
    QCOMPARE(m.losses.size(), plain.losses.size());
    for (size_t i = 0; i < m.losses.size(); ++i) QCOMPARE(m.losses[i], plain.losses[i]);
  }

  void everyActivationTrainsAndItsRewritesChangeNothing() {
    // conv-bn-ACT-conv-bn-ACT-gap-fc for each layer type of the activation family:
    // the second conv writes its dX over the first activation's output when
    // that activation's backward does not read it, so the rewritten program
    // must train like the plain one.
    int family = 0;
    for (LayerType t : kAllLayerTypes) {
      const std::string_view name = layer_type_name(t);
      if (name != "Tanh" && name != "SiLU" && name != "ReLU6" && name != "LeakyReLU" &&
          name != "GELU" && name != "Sigmoid")
        continue;
      ++family;
      Project p = small_project();
      ModelBuilder b;
      b.project() = p;
      b.project().model = {};
      LayerParams act;
      act.negative_slope = 0.1;
      b.node("in", LayerType::Input, input(8, 8, 1))
          .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
          .node("bn1", LayerType::BatchNorm2d)
          .node("act1", t, act)
          .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 2, 2, 1, 1, false))
          .node("bn2", LayerType::BatchNorm2d)
          .node("act2", t, act)
          .node("gap", LayerType::GlobalAvgPool)
          .node("fc", LayerType::Linear, linear(4))
          .node("loss", LayerType::SoftmaxCrossEntropy)
          .chain({"in", "conv1", "bn1", "act1", "conv2", "bn2", "act2", "gap", "fc", "loss"});
      p = b.build();
      const Run rewritten = run(p);
      const Run plain = run(p, {}, unfused(false));
      QVERIFY(same_losses(rewritten, plain, name.data()));
      // Learning, and above chance (4 classes); sigmoid learns the slowest (0.41 here).
      QVERIFY(learns(rewritten, 0.97, 0.3, name.data()));
    }
    QCOMPARE(family, 6);
  }

  // The residual join fused (ADD_RELU) trains bit for bit as the Add and
  // the ReLU apart, in FP32 and AMP, and so does x + x (one gradient slot
  // for both ports).
  void fusedResidualJoinTrainsBitForBit() {
    CompileOptions apart;
    apart.fuse_add_relu = false;
    TrainOptions o;
    o.epochs = 1;
    for (const Precision precision : {Precision::FP32, Precision::AMP}) {
      Project p = small_project();
      p.training.precision = precision;
      const Run fused = run(p, o);
      const Run unfused = run(p, o, apart);
      QVERIFY(!fused.losses.empty());
      QVERIFY(fused.losses == unfused.losses);
      QCOMPARE(fused.report.epochs.back().val_loss, unfused.report.epochs.back().val_loss);
    }
    ModelBuilder b;
    b.project() = small_project();
    b.project().model = {};
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
        .node("add", LayerType::Add)
        .node("relu", LayerType::ReLU)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1"})
        .edge("conv1", "add", 0)
        .edge("conv1", "add", 1)
        .chain({"add", "relu", "fc", "loss"});
    const Project twice = b.build();
    QCOMPARE(compile_project(twice).layers[2].fused_relu, 3);
    QVERIFY(run(twice, o).losses == run(twice, o, apart).losses);
  }

  void groupedAndDepthwiseConvolutionsTrain() {
    // A MobileNet-like block: a depthwise 3x3 and a pointwise 1x1, then a
    // convolution in 4 groups; the memory rewrites must change nothing.
    Project p = small_project();
    ModelBuilder b;
    b.project() = p;
    b.project().model = {};
    LayerParams depthwise = conv(8, 3, 3, 1, 1, 1, 1, false);
    depthwise.groups = 8;
    LayerParams grouped = conv(16, 3, 3, 2, 2, 1, 1, false);
    grouped.groups = 4;
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("dw", LayerType::Conv2d, depthwise)
        .node("bn2", LayerType::BatchNorm2d)
        .node("relu2", LayerType::ReLU6)
        .node("pw", LayerType::Conv2d, conv(16, 1, 1, 1, 1, 0, 0, false))
        .node("grouped", LayerType::Conv2d, grouped)
        .node("bn3", LayerType::BatchNorm2d)
        .node("relu3", LayerType::ReLU)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1", "bn1", "relu1", "dw", "bn2", "relu2", "pw", "grouped", "bn3",
                "relu3", "gap", "fc", "loss"});
    p = b.build();
    const CompiledProject cp = compile_project(p);
    QCOMPARE(cp.plans.front().get_dtensor(cp.layers[4].weight_in(ParamSeries::W)).shape,
             (Shape{8, 3, 3, 1}));
    QCOMPARE(cp.plans.front().get_dtensor(cp.layers[8].weight_in(ParamSeries::W)).shape,
             (Shape{16, 3, 3, 4}));
    const Run rewritten = run(p);
    const Run plain = run(p, {}, unfused(false));
    QVERIFY(same_losses(rewritten, plain, "rewritten against plain"));
    QVERIFY(learns(rewritten, 0.8, 0.6, "rewritten"));
  }

  void concatenatedBranchesTrain() {
    // A DenseNet-like block: a 3x3 and a 1x1 branch joined along the channels
    // with the block's input (6 + 2 + 8), then a Concat of one tensor with
    // itself on three ports (all three gradient slices into one slot).
    Project p = small_project();
    ModelBuilder b;
    b.project() = p;
    b.project().model = {};
    LayerParams three;
    three.inputs = 3;
    b.node("in", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, false))
        .node("bn1", LayerType::BatchNorm2d)
        .node("relu1", LayerType::ReLU)
        .node("a", LayerType::Conv2d, conv(6, 3, 3, 1, 1, 1, 1, true))
        .node("relu_a", LayerType::ReLU)
        .node("b", LayerType::Conv2d, conv(2, 1, 1, 1, 1, 0, 0, true))
        .node("cat", LayerType::Concat, three)
        .node("thrice", LayerType::Concat, three)
        .node("bn2", LayerType::BatchNorm2d)
        .node("relu2", LayerType::ReLU)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(4))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"in", "conv1", "bn1", "relu1", "a", "relu_a", "cat", "thrice", "bn2", "relu2",
                "gap", "fc", "loss"})
        .edge("relu1", "b")
        .edge("b", "cat", 1)
        .edge("relu1", "cat", 2)
        .edge("cat", "thrice", 1)
        .edge("cat", "thrice", 2);
    p = b.build();
    const CompiledProject cp = compile_project(p);
    QCOMPARE(cp.plans.front().get_dtensor(cp.layers[7].out).shape.c, int64_t{16});
    QCOMPARE(cp.plans.front().get_dtensor(cp.layers[8].out).shape.c, int64_t{48});
    const Run rewritten = run(p);
    const Run plain = run(p, {}, unfused(false));
    QVERIFY(same_losses(rewritten, plain, "rewritten against plain"));
    QVERIFY(learns(rewritten, 0.8, 0.6, "rewritten"));
  }

  void sameSeedSameCurve() {
    const Run a = run(small_project(true));
    const Run b = run(small_project(true));
    QCOMPARE(a.losses.size(), b.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i) QCOMPARE(a.losses[i], b.losses[i]);
    Project other = small_project(true);
    other.training.seed = 8;
    const Run c = run(other);
    QVERIFY(c.losses != a.losses);
  }

  void lastBatchUsesItsVariantWithoutRecapture() {
    const CompiledProject cp = compile_project(small_project());
    const int last = cp.variant_index(VariantKind::LastBatch);
    QVERIFY(last >= 0);
    QCOMPARE(cp.variants[static_cast<size_t>(last)].batch, int64_t{40});
    // every graph is captured exactly once: shape-dependent ones per variant,
    // shape-invariant ones once for all
    int shared = 0, per_last = 0;
    for (const ComputationGraph& g : cp.graphs) {
      shared += g.variant < 0;
      per_last += g.variant == last;
    }
    QVERIFY(shared > 0);
    QCOMPARE(per_last, 7);  // TRANSFER_A/B, FIRST_LAYER_FWD_A/B, DEEP_FWD_BWD, FIRST_LAYER_BWD_A/B
    TrainOptions o;
    o.epochs = 1;
    o.validate = false;
    const Run r = run(small_project(), o);
    QCOMPARE(r.report.steps, int64_t{16});
  }

  // The host enqueues step s + 1 before it reports step s, so a stop asked
  // for in step 4's report lets step 5, already on its way, finish and be
  // reported; nothing after it starts.
  void stopEndsTheRunAfterTheStepInFlight() {
    std::atomic<bool> stop{false};
    TrainOptions o;
    o.stop = &stop;
    const CompiledProject cp = compile_project(small_project());
    auto data = load_dataset(cp.project.dataset, "", 7);
    auto backend = cpu::make_cpu_backend({});
    TrainCallbacks cb;
    cb.on_step = [&](const StepReport& s) {
      if (s.step == 4) stop = true;
    };
    const TrainReport report = train(cp, *backend, *data, o, cb);
    QVERIFY(report.stopped);
    QVERIFY(!report.reached_max_steps);
    QCOMPARE(report.steps, int64_t{6});
    QCOMPARE(report.step_seconds.size(), size_t{6});
    // The epoch it stopped in is reported, not validated.
    QCOMPARE(report.epochs.size(), size_t{1});
    QVERIFY(!report.epochs[0].validated);
  }

  // A front end that holds the step callback (the workbench's pause) does
  // not make the epoch look slow: 16 steps held 0.1 s each add 1.6 s of
  // wall time that the epoch's seconds and images/s leave out.
  void heldCallbacksAreNotTrainingTime() {
    TrainOptions o;
    o.max_steps = 16;
    o.validate = false;
    const CompiledProject cp = compile_project(small_project());
    auto data = load_dataset(cp.project.dataset, "", 7);
    auto backend = cpu::make_cpu_backend({});
    TrainCallbacks cb;
    cb.on_step = [](const StepReport&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    };
    const auto t0 = std::chrono::steady_clock::now();
    const TrainReport report = train(cp, *backend, *data, o, cb);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QCOMPARE(report.epochs.size(), size_t{1});
    QVERIFY2(wall >= 1.6, qPrintable(QString::number(wall)));
    QVERIFY2(
        report.epochs[0].seconds <= wall - 1.5,
        qPrintable(
            QStringLiteral("epoch %1 s of %2 s wall").arg(report.epochs[0].seconds).arg(wall)));
    QVERIFY(report.epochs[0].seconds > 0);
    // The step in flight during each hold finished in it: it is not timed
    // as the moment its result took to read (a spike of images/s).
    std::vector<double> times = report.step_seconds;
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];
    for (double t : report.step_seconds)
      QVERIFY2(t >= 0.2 * median,
               qPrintable(QStringLiteral("%1 s against a median of %2 s").arg(t).arg(median)));
  }

  // max_steps ends a run as its last epoch would: validated, not stopped.
  // On an epoch boundary the epoch before was validated; nothing is
  // reported for the epoch that did not begin.
  void maxStepsEndsLikeAnEpochEnd() {
    TrainOptions o;
    o.max_steps = 20;  // 16 steps per epoch: 4 into the second
    Run r = run(small_project(), o);
    QVERIFY(r.report.reached_max_steps && !r.report.stopped);
    QCOMPARE(r.report.steps, int64_t{20});
    QCOMPARE(r.report.epochs.size(), size_t{2});
    QVERIFY(r.report.epochs[0].validated && r.report.epochs[1].validated);
    QCOMPARE(r.report.epochs[1].confusion.size(), size_t{16});
    o.max_steps = 16;
    r = run(small_project(), o);
    QVERIFY(r.report.reached_max_steps);
    QCOMPARE(r.report.epochs.size(), size_t{1});
    QVERIFY(r.report.epochs[0].validated);
    o.validate = false;
    o.max_steps = 20;
    r = run(small_project(), o);
    QCOMPARE(r.report.epochs.size(), size_t{2});
    QVERIFY(!r.report.epochs[1].validated);
  }

  void profilesStreams() {
    TrainOptions o;
    o.epochs = 1;
    o.validate = false;
    o.profile_begin = 2;
    o.profile_end = 4;
    const Run r = run(small_project(), o);
    QVERIFY(!r.report.profile.empty());
    std::set<StreamKind> streams;
    std::set<GraphId> graphs;
    for (const ProfileSpan& s : r.report.profile) {
      streams.insert(s.tag.stream);
      graphs.insert(s.tag.graph);
      QVERIFY(s.end_us >= s.start_us);
    }
    for (StreamKind k : {StreamKind::TRANS, StreamKind::COMP_1, StreamKind::COMP_2,
                         StreamKind::COMP_3, StreamKind::UPDATE})
      QVERIFY2(streams.count(k), stream_kind_name(k).data());
    QVERIFY(graphs.count(GraphId::DEEP_FWD_BWD));
    QVERIFY(graphs.count(GraphId::OPTIMIZER));
    const std::string trace = chrome_trace_json(r.report.profile);
    QVERIFY(trace.find("\"traceEvents\"") != std::string::npos);
    QVERIFY(trace.find("DEEP_FWD_BWD") != std::string::npos);
  }

  // Spans are taken at the end of every profiled step: each says its step,
  // every rank's are there, and all of step k ended before step k+1 began
  // (every rank finishes a step before the spans are taken). The callback
  // gets all of them once.
  void profiledSpansKnowTheirStep() {
    Project p = small_project();
    p.training.devices.ids = {0, 1};
    TrainOptions o;
    o.epochs = 1;
    o.validate = false;
    o.profile_begin = 2;
    o.profile_end = 5;
    const CompiledProject cp = compile_project(p);
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    auto backend = cpu::make_cpu_backend({cp.world_size, true});
    int calls = 0;
    std::vector<ProfileSpan> delivered;
    TrainCallbacks cb;
    cb.on_profile = [&](const std::vector<ProfileSpan>& spans) {
      ++calls;
      delivered = spans;
    };
    const TrainReport report = train(cp, *backend, *data, o, cb);
    QCOMPARE(calls, 1);
    QCOMPARE(delivered.size(), report.profile.size());
    std::map<int64_t, std::set<int>> ranks_of_step;
    std::map<std::pair<int64_t, int>, std::set<GraphId>> graphs;
    std::map<int64_t, double> first_start, last_end;
    for (const ProfileSpan& s : report.profile) {
      ranks_of_step[s.step].insert(s.rank);
      graphs[{s.step, s.rank}].insert(s.tag.graph);
      if (!first_start.count(s.step) || s.start_us < first_start[s.step])
        first_start[s.step] = s.start_us;
      last_end[s.step] = std::max(last_end[s.step], s.end_us);
    }
    QCOMPARE(ranks_of_step.size(), size_t{3});
    for (int64_t step = 2; step < 5; ++step) {
      QVERIFY2(ranks_of_step.count(step), qPrintable(QString("no spans of step %1").arg(step)));
      QCOMPARE(ranks_of_step[step], (std::set<int>{0, 1}));
      for (int rank = 0; rank < 2; ++rank) {
        const std::set<GraphId>& g = graphs[{step, rank}];
        QVERIFY(g.count(GraphId::DEEP_FWD_BWD) && g.count(GraphId::OPTIMIZER));
        // The next batch's transfer, launched in this step, is this step's.
        QVERIFY(g.count(GraphId::TRANSFER_A) + g.count(GraphId::TRANSFER_B) == 1);
      }
      if (step > 2) QVERIFY(last_end[step - 1] <= first_start[step]);
    }
    for (size_t i = 0; i < delivered.size(); ++i)
      QCOMPARE(delivered[i].step, report.profile[i].step);
  }

  // Work between two profiled steps (an epoch end's validation) is taken with
  // the step after it; when training ends inside the profiled steps, what ran
  // after the last one counts to it, and the callback is not called.
  void profileAcrossAnEpochEndAndOneCutShort() {
    auto inference = [](const ProfileSpan& s) {
      return s.tag.graph == GraphId::INF_MAIN_A || s.tag.graph == GraphId::INF_MAIN_B;
    };
    TrainOptions o;
    o.epochs = 2;
    o.max_steps = 17;
    o.profile_begin = 15;  // the last step of epoch 1 (16 batches) and the first of epoch 2
    o.profile_end = 17;
    Run r = run(small_project(), o);
    std::set<int64_t> steps, inference_steps;
    for (const ProfileSpan& s : r.report.profile) {
      steps.insert(s.step);
      if (inference(s)) inference_steps.insert(s.step);
    }
    QCOMPARE(steps, (std::set<int64_t>{15, 16}));
    QCOMPARE(inference_steps, (std::set<int64_t>{16}));

    o.epochs = 1;
    o.max_steps = 4;
    o.profile_begin = 2;
    o.profile_end = 8;
    const CompiledProject cp = compile_project(small_project());
    auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    auto backend = cpu::make_cpu_backend({cp.world_size, true});
    int calls = 0;
    TrainCallbacks cb;
    cb.on_profile = [&](const std::vector<ProfileSpan>&) { ++calls; };
    const TrainReport report = train(cp, *backend, *data, o, cb);
    QCOMPARE(calls, 0);
    steps.clear();
    inference_steps.clear();
    for (const ProfileSpan& s : report.profile) {
      steps.insert(s.step);
      if (inference(s)) inference_steps.insert(s.step);
    }
    QCOMPARE(steps, (std::set<int64_t>{2, 3}));
    QCOMPARE(inference_steps, (std::set<int64_t>{3}));  // the validation at --max-steps
  }

  void nanLossIsReported() {
    Project p = small_project();
    p.training.optimizer.lr = 1e30;
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, run(p));
  }
};

QTEST_APPLESS_MAIN(TestTraining)
#include "test_training.moc"

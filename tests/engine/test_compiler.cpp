// SPDX-License-Identifier: GPL-3.0-or-later
// Tests compile_project: variants, one blueprint, regions, graphs per GraphId, stream policy.
#include <QtTest>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/memory_plan.h>
#include <renaissance/project_io.h>
#include "compile/compiler.h"
#include "compile/layer_lowering.h"
#include "compile/ops.h"
#include "compile/step_packing.h"
#include "compile/stream_policy.h"
#include "model_builder.h"

using namespace tr;

namespace tr {
// Lets QCOMPARE print these on failure (found by argument-dependent lookup).
char* toString(const Region& r) {
  return qstrdup(std::string(region_name(r)).c_str());
}
char* toString(const StreamKind& s) {
  return qstrdup(std::string(stream_kind_name(s)).c_str());
}
char* toString(const ByteRange& r) {
  return qstrdup(("{+" + std::to_string(r.offset) + "," + std::to_string(r.bytes) + "}").c_str());
}
}  // namespace tr

namespace {

Project load(const char* name) {
  return load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
}

// A ModelBuilder for a synthetic 8x8x1 dataset of 10 classes (1000 train, 200
// val samples), global batch 32, and train, last-batch and val (50) variants.
ModelBuilder synthetic_builder() {
  ModelBuilder b;
  Project& p = b.project();
  p.dataset.kind = DatasetKind::Synthetic;
  p.dataset.height = 8;
  p.dataset.width = 8;
  p.dataset.channels = 1;
  p.dataset.classes = 10;
  p.dataset.train_size = 1000;
  p.dataset.val_size = 200;
  p.training.global_batch = 32;
  p.variants = {{"train", VariantKind::Train, 0, 0, 0},
                {"last", VariantKind::LastBatch, 0, 0, 0},
                {"val", VariantKind::Validation, 50, 0, 0}};
  return b;
}

// input 8x8x1 -> conv1 -> [bn1] -> relu1 -> conv2 -> [bn2] -> relu2 -> pool -> dropout
// -> flatten -> fc -> loss. Convs carry a bias unless batch-normalised.
Project small_cnn(bool bn) {
  ModelBuilder b = synthetic_builder();
  b.node("input", LayerType::Input, input(8, 8, 1))
      .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1, !bn))
      .node("relu1", LayerType::ReLU)
      .node("conv2", LayerType::Conv2d, square_conv(8, 3, 1, 1, !bn))
      .node("relu2", LayerType::ReLU)
      .node("pool", LayerType::MaxPool2d, pool(2, 2))
      .node("dropout", LayerType::Dropout)
      .node("flatten", LayerType::Flatten)
      .node("fc", LayerType::Linear, linear(10))
      .node("loss", LayerType::SoftmaxCrossEntropy);
  if (bn) {
    b.node("bn1", LayerType::BatchNorm2d).node("bn2", LayerType::BatchNorm2d);
    b.chain({"input", "conv1", "bn1", "relu1", "conv2", "bn2", "relu2"});
  } else {
    b.chain({"input", "conv1", "relu1", "conv2", "relu2"});
  }
  b.chain({"relu2", "pool", "dropout", "flatten", "fc", "loss"});
  return b.build();
}

// An MLP: the first layer is a Linear reading the image.
Project mlp() {
  ModelBuilder b = synthetic_builder();
  b.node("input", LayerType::Input, input(8, 8, 1))
      .node("fc1", LayerType::Linear, linear(16))
      .node("act", LayerType::Tanh)
      .node("fc2", LayerType::Linear, linear(10))
      .node("loss", LayerType::SoftmaxCrossEntropy)
      .chain({"input", "fc1", "act", "fc2", "loss"});
  return b.build();
}

std::vector<const ComputationGraph*> graphs_of(const CompiledProject& cp, GraphId id) {
  std::vector<const ComputationGraph*> out;
  for (const ComputationGraph& g : cp.graphs)
    if (g.id == id) out.push_back(&g);
  return out;
}

const ComputationGraph* graph_in(const CompiledProject& cp, GraphId id, int variant) {
  const ComputationGraph* found = nullptr;
  for (const ComputationGraph& g : cp.graphs)
    if (g.id == id && g.variant == variant) {
      if (found) return nullptr;  // duplicates count as missing: callers expect one
      found = &g;
    }
  return found;
}

int node_index(const CompiledProject& cp, const std::string& id) {
  const int i = cp.project.model.find(id);
  if (i < 0) qFatal("no node %s", id.c_str());
  return i;
}

const LayerTensors& layer(const CompiledProject& cp, const std::string& id) {
  return cp.layers[static_cast<size_t>(node_index(cp, id))];
}

Region region_of(const CompiledProject& cp, DTensorId id) {
  return cp.plans.front().get_dtensor(id).region;
}

bool is_grad_slot(Region r) {
  return r == Region::F_GRAD_SLOT_FP32 || r == Region::F_GRAD_SLOT_FP16;
}

// Tensors whose shape (or existence) follows the batch.
bool shape_dependent_region(Region r) {
  const char s = region_series(r);
  return s == 'F' || s == 'I' || r == Region::S_MASK || r == Region::T_SCRATCH;
}

uint64_t series_bytes(const MemoryPlan& plan, ParamSeries s) {
  return plan
      .region_range(param_region(s, ParamKind::BN_BIAS), param_region(s, ParamKind::DEEP_CONV))
      .bytes;
}

// The parameters that have a 16-bit copy: all but batch norm's.
uint64_t non_bn_bytes(const MemoryPlan& plan, ParamSeries s) {
  return plan
      .region_range(param_region(s, ParamKind::FC_BIAS), param_region(s, ParamKind::DEEP_CONV))
      .bytes;
}

// 16-bit training: every batch-norm training node reads FP32 scale and
// shift from W and writes FP32 gradients into G (dbeta sums N*H*W
// loss-scaled rows, which FP16 cannot hold), which ZERO_GRAD clears.
void bnParametersStayFp32(const CompiledProject& cp) {
  const MemoryPlan& plan = cp.plans.front();
  size_t checked = 0;
  for (const ComputationGraph& g : cp.graphs)
    for (const GraphNode& n : g.nodes) {
      if (n.kind != NodeKind::COMPUTE) continue;
      const bool train = n.op == ComputeOp::BN_FWD_TRAIN || n.op == ComputeOp::BN_RELU_FWD_TRAIN;
      const bool bwd = n.op == ComputeOp::BN_BWD || n.op == ComputeOp::BN_RELU_BWD;
      if (!train && !bwd) continue;
      const DTensor& gamma = plan.get_dtensor(n.inputs.at(1));
      QCOMPARE(gamma.dtype, DType::FP32);
      QCOMPARE(gamma.region, Region::W_BN_WEIGHT);
      if (bwd) {
        QCOMPARE(plan.get_dtensor(n.outputs.at(0)).region, Region::G_BN_WEIGHT);
        QCOMPARE(plan.get_dtensor(n.outputs.at(1)).region, Region::G_BN_BIAS);
        QCOMPARE(plan.get_dtensor(n.outputs.at(1)).dtype, DType::FP32);
      }
      ++checked;
    }
  QVERIFY(checked > 0);
  const GraphNode& zero = graphs_of(cp, GraphId::ZERO_GRAD).front()->nodes.at(0);
  QVERIFY(std::find(zero.out_spans.begin(), zero.out_spans.end(),
                    RegionSpan{Region::G_BN_BIAS, Region::G_BN_WEIGHT}) != zero.out_spans.end());
}

constexpr ParamKind kKinds[] = {ParamKind::BN_BIAS,   ParamKind::BN_WEIGHT,  ParamKind::FC_BIAS,
                                ParamKind::FC_WEIGHT, ParamKind::FIRST_CONV, ParamKind::DEEP_CONV};

size_t series_count(const MemoryPlan& plan, ParamSeries s) {
  size_t n = 0;
  for (ParamKind k : kKinds) n += plan.region(param_region(s, k)).tensors.size();
  return n;
}

CompiledProject compile_or_fail(const Project& p, const CompileOptions& options = {}) {
  try {
    return compile_project(p, options);
  } catch (const ProjectError& e) {
    qFatal("compile_project failed: %s", e.what());
  }
}

// One kernel per layer and one slot per gradient: the program the rewrites start from.
// `fuse`: BN+ReLU and Add+ReLU.
CompileOptions rewrites(bool fuse, bool in_place_dx, bool pack_memory = true) {
  CompileOptions o;
  o.fuse_bn_relu = o.fuse_add_relu = fuse;
  o.in_place_dx = o.pool_where = in_place_dx;
  o.pack_memory = pack_memory;
  return o;
}
const CompileOptions kPlain = rewrites(false, false);
// The plan before lifetimes: every tensor its own bytes, one offset per id.
const CompileOptions kUnpacked = rewrites(true, true, false);
// Validation at the project's batch, not in micro-batches.
CompileOptions as_written(CompileOptions o = {}) {
  o.validation_micro_batch = CompileOptions::kAsWritten;
  return o;
}

// The ProjectError compile_project throws; fails the test when it does not.
std::vector<Diagnostic> compile_errors(const Project& p) {
  try {
    compile_project(p);
  } catch (const ProjectError& e) {
    return e.diagnostics();
  }
  return {};
}

}  // namespace

class TestCompiler : public QObject {
  Q_OBJECT

 private slots:
  // ---- phase 1: variants -------------------------------------------------

  void variantsResolvedFromProjectFile() {
    const CompiledProject cp = compile_or_fail(load("lenet-fashion"));
    QCOMPARE(cp.world_size, 1);
    QCOMPARE(cp.variants.size(), size_t{3});
    QCOMPARE(cp.plans.size(), size_t{3});
    QCOMPARE(qs(cp.variants[0].name), QString("train"));
    QCOMPARE(cp.variants[0].batch, int64_t{128});
    QCOMPARE(cp.variants[1].kind, VariantKind::LastBatch);
    QCOMPARE(cp.variants[1].batch, int64_t{60000 % 128});  // 96
    QCOMPARE(cp.variants[1].batch, int64_t{96});
    QCOMPARE(cp.variants[2].kind, VariantKind::Validation);
    // Micro-batches of the file's 1000: the largest whose forward fits in
    // what training needs and whose batches cover the 10,000 samples.
    QCOMPARE(cp.variants[2].batch, int64_t{125});
    QCOMPARE(cp.validation_batch_written, int64_t{1000});
    QCOMPARE(cp.design.variants[2].batch, int64_t{1000});
    QCOMPARE(compile_or_fail(load("lenet-fashion"), as_written()).variants[2].batch, int64_t{1000});
    for (size_t i = 0; i < cp.variants.size(); ++i)
      QCOMPARE(qs(cp.plans[i].variant_name()), qs(cp.variants[i].name));
    QCOMPARE(cp.variant_index(VariantKind::Train), 0);
    QCOMPARE(cp.variant_index(VariantKind::LastBatch), 1);
    QCOMPARE(cp.variant_index(VariantKind::Validation), 2);
    // The analysis kept is the train variant's.
    QCOMPARE(cp.analysis.nodes[static_cast<size_t>(cp.analysis.input_node)].output.n, int64_t{128});
    QCOMPARE(cp.analysis.total_params, int64_t{61706});

    // Two and four ranks: per-device batches.
    Project p = load("lenet-fashion");
    p.training.devices.ids = {0, 1};
    const CompiledProject two = compile_or_fail(p);
    QCOMPARE(two.world_size, 2);
    QCOMPARE(two.variants[0].batch, int64_t{64});
    QCOMPARE(two.variants[1].batch, int64_t{48});
    QCOMPARE(two.variants[2].batch, int64_t{50});  // micro-batches: 2 x 50 divides 10,000
    p.training.devices.ids = {0, 1, 2, 3};
    const CompiledProject four = compile_or_fail(p);
    QCOMPARE(four.variants[0].batch, int64_t{32});
    QCOMPARE(four.variants[1].batch, int64_t{24});
    // The plans' input buffers follow the per-device batch.
    QCOMPARE(four.plans[0].get_dtensor(four.engine.input[0]).shape, (Shape{32, 28, 28, 1}));
    QCOMPARE(four.plans[1].get_dtensor(four.engine.input[0]).shape, (Shape{24, 28, 28, 1}));
    QCOMPARE(four.plans[2].get_dtensor(four.engine.input[0]).shape, (Shape{25, 28, 28, 1}));
  }

  void lastBatchWithoutRemainderIsDropped() {
    Project p = small_cnn(false);
    p.dataset.train_size = 60000;
    p.training.global_batch = 100;
    const CompiledProject cp = compile_or_fail(p);
    QCOMPARE(cp.variants.size(), size_t{2});
    QCOMPARE(cp.plans.size(), size_t{2});
    QCOMPARE(cp.variant_index(VariantKind::LastBatch), -1);
    QCOMPARE(cp.variants[0].batch, int64_t{100});
    QCOMPARE(cp.variant_index(VariantKind::Validation), 1);
    QCOMPARE(qs(cp.variants[1].name), QString("val"));
    for (const ComputationGraph& g : cp.graphs) QVERIFY(g.variant < 2);

    // With a remainder it is kept: 1000 % 32 = 8.
    const CompiledProject kept = compile_or_fail(small_cnn(false));
    QCOMPARE(kept.variants.size(), size_t{3});
    QCOMPARE(kept.variants[1].batch, int64_t{8});

    // An explicit last-batch size is taken as given.
    Project q = small_cnn(false);
    q.variants[1].batch = 5;
    QCOMPARE(compile_or_fail(q).variants[1].batch, int64_t{5});
  }

  void variantErrors() {
    {
      // validation batch x world > val_size
      Project p = small_cnn(false);
      p.training.devices.ids = {0, 1};
      p.variants[2].batch = 101;  // 202 > 200
      const auto errors = compile_errors(p);
      QCOMPARE(errors.size(), size_t{1});
      QCOMPARE(qs(errors[0].field), QString("variants[2].batch"));
      QVERIFY2(errors[0].message.find("200") != std::string::npos, errors[0].message.c_str());
      QCOMPARE(qs(errors[0].file), QString("in-memory.json"));
      p.variants[2].batch = 100;  // exactly all samples is fine
      QCOMPARE(compile_or_fail(p, as_written()).variants[2].batch, int64_t{100});
    }
    {
      // explicit train batch != global / world
      Project p = small_cnn(false);
      p.training.devices.ids = {0, 1};
      p.variants[0].batch = 32;  // global 32 / 2 ranks = 16
      const auto errors = compile_errors(p);
      QCOMPARE(errors.size(), size_t{1});
      QCOMPARE(qs(errors[0].field), QString("variants[0].batch"));
      QVERIFY2(errors[0].message.find("16") != std::string::npos, errors[0].message.c_str());
      p.variants[0].batch = 16;
      QCOMPARE(compile_or_fail(p).variants[0].batch, int64_t{16});
    }
    {
      // Both at once: every problem is reported.
      Project p = small_cnn(false);
      p.variants[0].batch = 7;
      p.variants[2].batch = 500;
      QCOMPARE(compile_errors(p).size(), size_t{2});
    }
    {
      // A global batch that does not divide by the ranks.
      Project p = small_cnn(false);
      p.training.devices.ids = {0, 1, 2};
      const auto errors = compile_errors(p);
      QCOMPARE(errors.size(), size_t{1});
      QCOMPARE(qs(errors[0].field), QString("training.global_batch"));
    }
    {
      // No train variant, and a validation variant without a batch.
      Project p = small_cnn(false);
      p.variants = {{"val", VariantKind::Validation, 0, 0, 0}};
      const auto errors = compile_errors(p);
      QCOMPARE(errors.size(), size_t{2});
    }
    {
      // A model error is a ProjectError naming the node.
      Project p = small_cnn(false);
      p.dataset.classes = 4;
      const auto errors = compile_errors(p);
      QCOMPARE(errors.size(), size_t{1});
      QCOMPARE(qs(errors[0].node_id), QString("loss"));
    }
    {
      // A resolution variant the model cannot take: the message says which variant.
      Project p = small_cnn(false);
      p.variants.push_back({"tiny", VariantKind::Validation, 10, 1, 1});
      const auto errors = compile_errors(p);
      QVERIFY(!errors.empty());
      for (const Diagnostic& d : errors)
        QVERIFY2(d.message.find("in variant 'tiny'") != std::string::npos, d.str().c_str());
    }
  }

  // ---- phases 2 and 3: one blueprint -------------------------------------

  void sameOffsetsInEveryVariant_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("lenet") << "lenet-fashion";
    QTest::newRow("cnn-bn") << "cnn-bn-fashion";
    QTest::newRow("resnet8") << "resnet8-fashion";
  }
  void sameOffsetsInEveryVariant() {
    QFETCH(QString, name);
    const CompiledProject cp =
        compile_or_fail(load(name.toStdString().c_str()), as_written(kUnpacked));
    QCOMPARE(cp.plans.size(), size_t{3});
    const MemoryPlan& ref = cp.plans.front();
    QVERIFY(ref.total_bytes() > 0);
    QCOMPARE(cp.bytes_per_device(), ref.total_bytes());
    size_t features = 0, weights = 0;
    for (size_t v = 0; v < cp.plans.size(); ++v) {
      const MemoryPlan& plan = cp.plans[v];
      QVERIFY(plan.finalized());
      QCOMPARE(plan.total_bytes(), ref.total_bytes());
      QCOMPARE(plan.dtensors().size(), ref.dtensors().size());
      for (int r = 0; r < kNumRegions; ++r) {
        QCOMPARE(plan.region(static_cast<Region>(r)).base_offset,
                 ref.region(static_cast<Region>(r)).base_offset);
        QCOMPARE(plan.region(static_cast<Region>(r)).total_bytes,
                 ref.region(static_cast<Region>(r)).total_bytes);
      }
      const int64_t batch = cp.variants[v].batch;
      for (const DTensor& t : plan.dtensors()) {
        const DTensor& r = ref.get_dtensor(t.id);
        QCOMPARE(t.offset, r.offset);
        QCOMPARE(t.slot_bytes, r.slot_bytes);
        QCOMPARE(t.region, r.region);
        QCOMPARE(qs(t.name), qs(r.name));
        QVERIFY(t.slot_bytes >=
                DTensor::slot_bytes_for(t.shape, t.dtype, t.region, t.pad_channels));
        const char s = region_series(t.region);
        if (s == 'F' || t.region == Region::I_A_DATA || t.region == Region::I_B_DATA) {
          QCOMPARE(t.shape.n, batch);
          if (v == 0) ++features;
        }
        if (s == 'W' || s == 'G' || s == 'M' || s == 'B') {
          QCOMPARE(t.shape, r.shape);
          if (v == 0) ++weights;
        }
      }
    }
    QVERIFY(features > 0);
    QVERIFY(weights > 0);
    // Each slot is the largest any variant needs (validation's 1000 here).
    for (const DTensor& t : ref.dtensors()) {
      uint64_t most = 0;
      for (const MemoryPlan& plan : cp.plans) {
        const DTensor& u = plan.get_dtensor(t.id);
        most = std::max(most, DTensor::slot_bytes_for(u.shape, u.dtype, u.region, u.pad_channels));
      }
      QCOMPARE(t.slot_bytes, most);
    }
    // Features differ in shape between train (128) and validation (1000).
    const DTensorId out = cp.layers[static_cast<size_t>(cp.analysis.first_layer)].out;
    QVERIFY(!(cp.plans[0].get_dtensor(out).shape == cp.plans[2].get_dtensor(out).shape));
    QCOMPARE(cp.plans[2].get_dtensor(out).shape.n, int64_t{1000});
  }

  // Packed: every region but F and T keeps one offset per id in every
  // variant; each variant places its own step-local tensors in the pool that
  // follows them, at its own sizes; the arena is the largest variant.
  void packedPlanKeepsParameterOffsets_data() { sameOffsetsInEveryVariant_data(); }
  void packedPlanKeepsParameterOffsets() {
    QFETCH(QString, name);
    // Validation at its written batch 1000, larger than training's.
    const CompiledProject cp = compile_or_fail(load(name.toStdString().c_str()), as_written());
    const CompiledProject unpacked =
        compile_or_fail(load(name.toStdString().c_str()), as_written(kUnpacked));
    QCOMPARE(cp.plans.size(), size_t{3});
    QCOMPARE(cp.pools.size(), cp.plans.size());
    QVERIFY(unpacked.pools.empty());
    const MemoryPlan& ref = cp.plans.front();
    uint64_t most = 0;
    for (size_t v = 0; v < cp.plans.size(); ++v) {
      const MemoryPlan& plan = cp.plans[v];
      QVERIFY(plan.packed());
      QVERIFY(!unpacked.plans[v].packed());
      QCOMPARE(plan.pool().offset, ref.pool().offset);
      QCOMPARE(plan.total_bytes(), plan.pool().end());
      QCOMPARE(plan.pool().bytes, cp.pools[v].packed_bytes);
      QVERIFY(cp.pools[v].peak_live_bytes <= cp.pools[v].packed_bytes);
      QVERIFY(cp.pools[v].packed_bytes <= cp.pools[v].slot_bytes);
      QCOMPARE(plan.step_local_slot_bytes(), cp.pools[v].slot_bytes);
      most = std::max(most, plan.total_bytes());
      for (const DTensor& t : plan.dtensors()) {
        const DTensor& r = ref.get_dtensor(t.id);
        if (is_step_local(t.region)) {
          QVERIFY(plan.region(t.region).packed);
          if (!plan.in_use(t.id)) continue;
          QVERIFY(t.offset >= plan.pool().offset);
          QVERIFY(t.offset + t.slot_bytes <= plan.pool().end());
          QCOMPARE(t.offset % 256, uint64_t{0});
          // its own variant's size, no larger
          QCOMPARE(t.slot_bytes,
                   DTensor::slot_bytes_for(t.shape, t.dtype, t.region, t.pad_channels));
        } else {
          QVERIFY(!plan.region(t.region).packed);
          QCOMPARE(t.offset, r.offset);
          QCOMPARE(t.slot_bytes, r.slot_bytes);
          QVERIFY(t.offset + t.slot_bytes <= plan.pool().offset);
        }
      }
    }
    QCOMPARE(cp.bytes_per_device(), most);
    // Validation (batch 1000) no longer sizes the training features, and the
    // packed arena is below the unpacked one.
    const int train = cp.variant_index(VariantKind::Train);
    QVERIFY(cp.plans[static_cast<size_t>(train)].total_bytes() < cp.bytes_per_device());
    QVERIFY(cp.bytes_per_device() < unpacked.bytes_per_device());
    // A validation pass never touches a gradient slot.
    const int val = cp.variant_index(VariantKind::Validation);
    for (const DTensor& t : cp.plans[static_cast<size_t>(val)].dtensors())
      if (t.region == Region::F_GRAD_SLOT_FP32)
        QVERIFY2(!cp.plans[static_cast<size_t>(val)].in_use(t.id), t.name.c_str());
  }

  // ---- regions --------------------------------------------------------------

  void ampRegionsAreHalfTheFp32Ones_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("lenet") << "lenet-fashion";
    QTest::newRow("cnn-bn") << "cnn-bn-fashion";
    QTest::newRow("resnet8") << "resnet8-fashion";
  }
  void ampRegionsAreHalfTheFp32Ones() {
    QFETCH(QString, name);
    Project p = load(name.toStdString().c_str());
    p.training.precision = Precision::AMP;
    const CompiledProject cp = compile_or_fail(p);
    for (const MemoryPlan& plan : cp.plans) {
      QVERIFY(series_bytes(plan, ParamSeries::A) > 0);
      QCOMPARE(non_bn_bytes(plan, ParamSeries::W), 2 * series_bytes(plan, ParamSeries::A));
      QCOMPARE(non_bn_bytes(plan, ParamSeries::G), 2 * series_bytes(plan, ParamSeries::H));
      for (ParamKind k : kKinds) {
        const Region w = param_region(ParamSeries::W, k);
        const size_t n = plan.region(w).tensors.size();
        // Batch norm's scale and shift stay FP32: no 16-bit copy or gradient.
        const size_t sixteen = is_bn_param(k) ? 0 : n;
        QCOMPARE(plan.region(w).total_bytes,
                 plan.region(param_region(ParamSeries::G, k)).total_bytes);
        if (!is_bn_param(k)) {
          QCOMPARE(plan.region(w).total_bytes,
                   2 * plan.region(param_region(ParamSeries::A, k)).total_bytes);
          QCOMPARE(plan.region(param_region(ParamSeries::G, k)).total_bytes,
                   2 * plan.region(param_region(ParamSeries::H, k)).total_bytes);
        }
        for (ParamSeries s : {ParamSeries::A, ParamSeries::H})
          QCOMPARE(plan.region(param_region(s, k)).tensors.size(), sixteen);
        for (ParamSeries s : {ParamSeries::G, ParamSeries::M})
          QCOMPARE(plan.region(param_region(s, k)).tensors.size(), n);
        QCOMPARE(plan.region(param_region(ParamSeries::E, k)).tensors.size(), size_t{0});
        QCOMPARE(plan.region(param_region(ParamSeries::V, k)).tensors.size(), size_t{0});
      }
      // FP16 features and gradient slots, FP16 input buffers.
      QVERIFY(plan.region(Region::F_FEATURE_FP32).tensors.empty());
      QVERIFY(plan.region(Region::F_GRAD_SLOT_FP32).tensors.empty());
      QVERIFY(!plan.region(Region::F_FEATURE_FP16).tensors.empty());
      QCOMPARE(plan.get_dtensor(cp.engine.input[0]).dtype, DType::FP16);
    }
    // Without AMP there are no A or H tensors, and features are FP32.
    const CompiledProject fp32 = compile_or_fail(load(name.toStdString().c_str()));
    QCOMPARE(series_count(fp32.plans[0], ParamSeries::A), size_t{0});
    QCOMPARE(series_count(fp32.plans[0], ParamSeries::H), size_t{0});
    QVERIFY(fp32.plans[0].region(Region::F_FEATURE_FP16).tensors.empty());
    QCOMPARE(series_count(fp32.plans[0], ParamSeries::W),
             series_count(cp.plans[0], ParamSeries::W));
    QCOMPARE(series_bytes(fp32.plans[0], ParamSeries::W),
             series_bytes(cp.plans[0], ParamSeries::W));
  }

  // No padding tax: the CPU's kernels take any channel count, so a CPU plan
  // stores 16-bit features compact and never needs more than FP32's; a CUDA
  // plan pads them to 8 as its kernels need.
  void sixteenBitPlansNeverExceedFp32_data() { ampRegionsAreHalfTheFp32Ones_data(); }
  void sixteenBitPlansNeverExceedFp32() {
    QFETCH(QString, name);
    const Project base = load(name.toStdString().c_str());
    const uint64_t fp32 = compile_or_fail(base).bytes_per_device();
    for (Precision precision : {Precision::AMP, Precision::BF16}) {
      Project p = base;
      p.training.precision = precision;
      const CompiledProject cp = compile_or_fail(p);
      QVERIFY2(cp.bytes_per_device() <= fp32,
               (std::to_string(cp.bytes_per_device()) + " > " + std::to_string(fp32)).c_str());
      for (const DTensor& t : cp.plans.front().dtensors()) QVERIFY(t.is_compact());
      p.training.devices = {DeviceKind::CUDA, {0}};
      const CompiledProject cuda = compile_or_fail(p);
      const DTensor& in = cuda.plans.front().get_dtensor(cuda.engine.input[0]);
      QCOMPARE(in.padded_c(), std::max<int64_t>(4, in.shape.c));
    }
  }

  void seriesFollowTheTrainingSettings() {
    auto counts = [](const Project& p) {
      const CompiledProject cp = compile_or_fail(p);
      std::map<char, size_t> n;
      for (ParamSeries s : {ParamSeries::W, ParamSeries::E, ParamSeries::A, ParamSeries::G,
                            ParamSeries::H, ParamSeries::M, ParamSeries::V})
        n["WEAGHMV"[static_cast<int>(s)]] = series_count(cp.plans[0], s);
      n['N'] = cp.plans[0].region(Region::N_FC).tensors.size() +
               cp.plans[0].region(Region::N_FIRST_CONV).tensors.size() +
               cp.plans[0].region(Region::N_DEEP_CONV).tensors.size();
      return n;
    };
    // small_cnn(false): conv1 w+b, conv2 w+b, fc w+b = 6 tensors per series.
    Project p = small_cnn(false);
    auto n = counts(p);
    QCOMPARE(n['W'], size_t{6});
    QCOMPARE(n['G'], size_t{6});
    QCOMPARE(n['M'], size_t{6});  // SGD with momentum 0.9
    QCOMPARE(n['E'], size_t{0});
    QCOMPARE(n['V'], size_t{0});
    QCOMPARE(n['A'], size_t{0});
    QCOMPARE(n['H'], size_t{0});
    QCOMPARE(n['N'], size_t{0});

    Project ema = p;
    ema.training.ema = true;
    n = counts(ema);
    QCOMPARE(n['E'], size_t{6});
    QCOMPARE(n['V'], size_t{0});

    Project adam = p;
    adam.training.optimizer.kind = OptimizerKind::Adam;
    n = counts(adam);
    QCOMPARE(n['V'], size_t{6});
    QCOMPARE(n['M'], size_t{6});
    QCOMPARE(n['E'], size_t{0});
    QCOMPARE(n['N'], size_t{0});

    Project lars = p;
    lars.training.optimizer.kind = OptimizerKind::LARS;
    n = counts(lars);
    QCOMPARE(n['N'], size_t{3});  // one pair of norms per layer with weights
    QCOMPARE(n['M'], size_t{6});
    QCOMPARE(n['V'], size_t{0});

    Project plain = p;
    plain.training.optimizer.momentum = 0;
    n = counts(plain);
    QCOMPARE(n['M'], size_t{0});
    QCOMPARE(n['W'], size_t{6});

    Project all = p;
    all.training.ema = true;
    all.training.precision = Precision::AMP;
    all.training.optimizer.kind = OptimizerKind::Adam;
    n = counts(all);
    for (char s : {'W', 'E', 'A', 'G', 'H', 'M', 'V'}) QCOMPARE(n[s], size_t{6});
  }

  void weightsLiveInTheirKindRegion() {
    {
      const CompiledProject cp = compile_or_fail(load("resnet8-fashion"));
      const ModelGraph& m = cp.project.model;
      int first = 0, deep = 0, fc = 0, bn = 0;
      for (size_t i = 0; i < m.nodes.size(); ++i) {
        const LayerTensors& t = cp.layers[i];
        const bool is_first = static_cast<int>(i) == cp.analysis.first_layer;
        switch (m.nodes[i].type) {
          case LayerType::Conv2d:
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::W)),
                     is_first ? Region::W_FIRST_CONV : Region::W_DEEP_CONV);
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::G)),
                     is_first ? Region::G_FIRST_CONV : Region::G_DEEP_CONV);
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::M)),
                     is_first ? Region::M_FIRST_CONV : Region::M_DEEP_CONV);
            QCOMPARE(t.bias_in(ParamSeries::W), kNoTensor);  // bias: false in the file
            (is_first ? first : deep)++;
            break;
          case LayerType::Linear:
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::W)), Region::W_FC_WEIGHT);
            QCOMPARE(region_of(cp, t.bias_in(ParamSeries::W)), Region::W_FC_BIAS);
            QCOMPARE(region_of(cp, t.bias_in(ParamSeries::G)), Region::G_FC_BIAS);
            ++fc;
            break;
          case LayerType::BatchNorm2d:
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::W)), Region::W_BN_WEIGHT);
            QCOMPARE(region_of(cp, t.bias_in(ParamSeries::W)), Region::W_BN_BIAS);
            QCOMPARE(region_of(cp, t.weight_in(ParamSeries::G)), Region::G_BN_WEIGHT);
            QCOMPARE(region_of(cp, t.prev_mean), Region::B_PREV_MEAN);
            QCOMPARE(region_of(cp, t.prev_var), Region::B_PREV_VAR);
            QCOMPARE(region_of(cp, t.next_mean), Region::B_NEXT_MEAN);
            QCOMPARE(region_of(cp, t.next_var), Region::B_NEXT_VAR);
            QCOMPARE(region_of(cp, t.eq_scale), Region::B_EQ_SCALE);
            QCOMPARE(region_of(cp, t.eq_bias), Region::B_EQ_BIAS);
            ++bn;
            break;
          default:
            QCOMPARE(t.weight_in(ParamSeries::W), kNoTensor);
            break;
        }
      }
      QCOMPARE(first, 1);
      QCOMPARE(deep, 8);
      QCOMPARE(fc, 1);
      QCOMPARE(bn, 9);
      QCOMPARE(cp.plans[0].region(Region::W_FIRST_CONV).tensors.size(), size_t{1});
      QCOMPARE(cp.plans[0].region(Region::W_DEEP_CONV).tensors.size(), size_t{8});
      QCOMPARE(cp.plans[0].region(Region::W_BN_WEIGHT).tensors.size(), size_t{9});
      // Weight layouts: conv [Co,kh,kw,Ci], linear [O,1,1,K].
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "s2b1_conv1").weight_in(ParamSeries::W)).shape,
               (Shape{32, 3, 3, 16}));
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "s2b1_sc_conv").weight_in(ParamSeries::W)).shape,
               (Shape{32, 1, 1, 16}));
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "fc").weight_in(ParamSeries::W)).shape,
               (Shape{10, 1, 1, 64}));
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "bn1").weight_in(ParamSeries::W)).shape,
               (Shape{1, 1, 1, 16}));
    }
    {
      // Conv biases live with their convolution's kind.
      const CompiledProject cp = compile_or_fail(load("lenet-fashion"));
      QCOMPARE(region_of(cp, layer(cp, "conv1").weight_in(ParamSeries::W)), Region::W_FIRST_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv1").bias_in(ParamSeries::W)), Region::W_FIRST_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv1").bias_in(ParamSeries::G)), Region::G_FIRST_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv2").weight_in(ParamSeries::W)), Region::W_DEEP_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv2").bias_in(ParamSeries::W)), Region::W_DEEP_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv2").bias_in(ParamSeries::G)), Region::G_DEEP_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv2").bias_in(ParamSeries::M)), Region::M_DEEP_CONV);
      for (const char* fc : {"fc1", "fc2", "fc3"}) {
        QCOMPARE(region_of(cp, layer(cp, fc).weight_in(ParamSeries::W)), Region::W_FC_WEIGHT);
        QCOMPARE(region_of(cp, layer(cp, fc).bias_in(ParamSeries::W)), Region::W_FC_BIAS);
      }
      QVERIFY(cp.plans[0].region(Region::W_BN_WEIGHT).tensors.empty());
      QVERIFY(cp.plans[0].region(Region::B_PREV_MEAN).tensors.empty());
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "conv1").bias_in(ParamSeries::W)).shape,
               (Shape{1, 1, 1, 6}));
      QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "fc1").weight_in(ParamSeries::W)).shape,
               (Shape{120, 1, 1, 400}));
    }
    {
      // AMP: the A and H copies share the kind.
      Project p = load("lenet-fashion");
      p.training.precision = Precision::AMP;
      const CompiledProject cp = compile_or_fail(p);
      QCOMPARE(region_of(cp, layer(cp, "conv1").weight_in(ParamSeries::A)), Region::A_FIRST_CONV);
      QCOMPARE(region_of(cp, layer(cp, "conv2").bias_in(ParamSeries::H)), Region::H_DEEP_CONV);
      QCOMPARE(region_of(cp, layer(cp, "fc2").bias_in(ParamSeries::A)), Region::A_FC_BIAS);
    }
  }

  // ---- phase 4: graphs ------------------------------------------------------

  void graphsPerVariant() {
    const CompiledProject cp = compile_or_fail(load("lenet-fashion"));
    const GraphId training[] = {GraphId::TRANSFER_A,        GraphId::TRANSFER_B,
                                GraphId::FIRST_LAYER_FWD_A, GraphId::FIRST_LAYER_FWD_B,
                                GraphId::DEEP_FWD_BWD,      GraphId::FIRST_LAYER_BWD_A,
                                GraphId::FIRST_LAYER_BWD_B};
    for (size_t v = 0; v < cp.variants.size(); ++v) {
      const int vi = static_cast<int>(v);
      const bool val = cp.variants[v].kind == VariantKind::Validation;
      for (GraphId id : {GraphId::TRANSFER_A, GraphId::TRANSFER_B}) {
        const ComputationGraph* g = graph_in(cp, id, vi);
        QVERIFY2(g, graph_id_name(id).data());
        QCOMPARE(g->stream, StreamKind::TRANS);
      }
      for (GraphId id : training) {
        const ComputationGraph* g = graph_in(cp, id, vi);
        if (val) {
          QVERIFY(id == GraphId::TRANSFER_A || id == GraphId::TRANSFER_B || !g);
          QVERIFY(id == GraphId::TRANSFER_A || id == GraphId::TRANSFER_B ||
                  graphs_of(cp, id).size() == 2);  // train and last only
          continue;
        }
        QVERIFY2(g, graph_id_name(id).data());
        QVERIFY(!g->shape_invariant);
        QVERIFY(!g->nodes.empty());
        QCOMPARE(g->stream, stream_for(id));
        QCOMPARE(cp.find_graph(id, vi), g);
      }
      for (GraphId id : {GraphId::INF_MAIN_A, GraphId::INF_MAIN_B}) {
        const ComputationGraph* g = graph_in(cp, id, vi);
        QCOMPARE(g != nullptr, val);
        if (g) QCOMPARE(g->stream, StreamKind::COMP_1);
      }
    }
    QCOMPARE(graphs_of(cp, GraphId::INF_MAIN_A).size(), size_t{1});
    QCOMPARE(graphs_of(cp, GraphId::TRANSFER_A).size(), size_t{3});

    // TRANSFER fills one buffer; FIRST_LAYER_FWD reads the same one.
    for (int buf = 0; buf < 2; ++buf) {
      const ComputationGraph* t = graph_in(cp, buf ? GraphId::TRANSFER_B : GraphId::TRANSFER_A, 0);
      QCOMPARE(t->nodes.size(), size_t{1});
      QCOMPARE(t->nodes[0].op, ComputeOp::H2D_INPUT);
      QCOMPARE(t->nodes[0].stream, StreamKind::TRANS);
      QVERIFY(t->nodes[0].outputs ==
              (std::vector<DTensorId>{cp.engine.input[buf], cp.engine.labels[buf]}));
      const ComputationGraph* f =
          graph_in(cp, buf ? GraphId::FIRST_LAYER_FWD_B : GraphId::FIRST_LAYER_FWD_A, 0);
      bool conv_fwd = false;
      for (const GraphNode& n : f->nodes) {
        if (n.op != ComputeOp::CONV_FWD) continue;
        conv_fwd = true;
        QCOMPARE(n.layer, cp.analysis.first_layer);
        QCOMPARE(n.inputs.front(), cp.engine.input[buf]);
        QCOMPARE(n.inputs.back(), layer(cp, "conv1").bias_in(ParamSeries::W));
        QVERIFY(n.outputs == std::vector<DTensorId>{layer(cp, "conv1").out});
      }
      QVERIFY(conv_fwd);
      // The first layer's backward: the weight gradient only, no dX.
      const ComputationGraph* b =
          graph_in(cp, buf ? GraphId::FIRST_LAYER_BWD_B : GraphId::FIRST_LAYER_BWD_A, 0);
      QCOMPARE(b->nodes.size(), size_t{1});
      const GraphNode& n = b->nodes[0];
      QCOMPARE(n.op, ComputeOp::CONV_BWD_FIRST);
      QCOMPARE(n.stream, StreamKind::COMP_1);
      QVERIFY(n.fork.empty());
      QVERIFY(std::count(n.inputs.begin(), n.inputs.end(), cp.engine.input[buf]) == 1);
      QVERIFY(std::count(n.inputs.begin(), n.inputs.end(), layer(cp, "conv1").grad) == 1);
      QVERIFY(n.outputs == (std::vector<DTensorId>{layer(cp, "conv1").weight_in(ParamSeries::G),
                                                   layer(cp, "conv1").bias_in(ParamSeries::G)}));
      for (DTensorId o : n.outputs) QVERIFY(!is_grad_slot(region_of(cp, o)));
    }

    // Inference: forward only, equivalent BN parameters, the result accumulated.
    const CompiledProject bn = compile_or_fail(load("cnn-bn-fashion"), kPlain);
    const int val = bn.variant_index(VariantKind::Validation);
    for (GraphId id : {GraphId::INF_MAIN_A, GraphId::INF_MAIN_B}) {
      const ComputationGraph* g = graph_in(bn, id, val);
      QVERIFY(g);
      const int buf = id == GraphId::INF_MAIN_B ? 1 : 0;
      int bn_infer = 0, softmax = 0;
      for (const GraphNode& n : g->nodes) {
        if (n.kind == NodeKind::RANGE) continue;
        QVERIFY(n.op != ComputeOp::BN_FWD_TRAIN && n.op != ComputeOp::SOFTMAX_CE_FWD_BWD &&
                n.op != ComputeOp::CONV_BWD && n.op != ComputeOp::BN_BWD &&
                n.op != ComputeOp::RELU_BWD && n.op != ComputeOp::LINEAR_BWD);
        for (DTensorId o : n.outputs) QVERIFY(!is_grad_slot(region_of(bn, o)));
        if (n.op == ComputeOp::BN_FWD_INFER) {
          ++bn_infer;
          const LayerTensors& t = bn.layers[static_cast<size_t>(n.layer)];
          QVERIFY(std::count(n.inputs.begin(), n.inputs.end(), t.eq_scale) == 1);
          QVERIFY(std::count(n.inputs.begin(), n.inputs.end(), t.eq_bias) == 1);
        }
        if (n.op == ComputeOp::SOFTMAX_CE_FWD) {
          ++softmax;
          QVERIFY(std::count(n.inputs.begin(), n.inputs.end(), bn.engine.labels[buf]) == 1);
          QVERIFY(n.outputs == (std::vector<DTensorId>{bn.engine.result, bn.engine.confusion}));
          QCOMPARE(n.accumulate_mask, uint8_t{0b10});  // counts add up over the batches
          QCOMPARE(bn.plans[static_cast<size_t>(val)].get_dtensor(bn.engine.confusion).shape,
                   (Shape{1, 1, 10, 10}));
        }
        if (n.op == ComputeOp::CONV_FWD && n.layer == bn.analysis.first_layer)
          QCOMPARE(n.inputs.front(), bn.engine.input[buf]);
      }
      QCOMPARE(bn_infer, 4);
      QCOMPARE(softmax, 1);
      const GraphNode& last = g->nodes.back();
      QCOMPARE(last.kind, NodeKind::RANGE);
      QCOMPARE(last.range_op, RangeOp::ACCUMULATE);
      QVERIFY(last.in_spans == (std::vector<RegionSpan>{{Region::R_RESULT, Region::R_RESULT}}));
      QVERIFY(last.out_spans == (std::vector<RegionSpan>{
                                    {Region::R_RESULT_ACCUMULATED, Region::R_RESULT_ACCUMULATED}}));
    }
  }

  void sharedGraphsExistOnce() {
    const CompiledProject cp = compile_or_fail(load("lenet-fashion"));
    for (GraphId id : {GraphId::ZERO_GRAD, GraphId::METRIC_ACCUMULATE,
                       GraphId::NAN_CHECK_AND_GRAD_SCALING, GraphId::OPTIMIZER}) {
      const auto gs = graphs_of(cp, id);
      QVERIFY2(gs.size() == 1, graph_id_name(id).data());
      const ComputationGraph& g = *gs.front();
      QCOMPARE(g.variant, -1);
      QVERIFY(g.shape_invariant);
      QVERIFY(!g.nodes.empty());
      QCOMPARE(g.stream, StreamKind::UPDATE);
      for (const GraphNode& n : g.nodes) {
        if (n.kind == NodeKind::RANGE) continue;
        // A COMPUTE node in a shared graph is a scalar op on UPDATE.
        QCOMPARE(n.stream, StreamKind::UPDATE);
        for (DTensorId t : n.inputs) QCOMPARE(t, cp.engine.scalars);
        for (DTensorId t : n.outputs) QCOMPARE(t, cp.engine.scalars);
      }
      // Every variant finds the shared graph.
      for (size_t v = 0; v < cp.variants.size(); ++v)
        QCOMPARE(cp.find_graph(id, static_cast<int>(v)), &g);
    }
    // ZERO_GRAD clears the whole gradient series in one launch.
    const ComputationGraph& zero = *graphs_of(cp, GraphId::ZERO_GRAD).front();
    QCOMPARE(zero.nodes.size(), size_t{1});
    QCOMPARE(zero.nodes[0].range_op, RangeOp::CLEAR);
    QCOMPARE(zero.nodes[0].stream, StreamKind::UPDATE);
    QVERIFY(zero.nodes[0].out_spans ==
            (std::vector<RegionSpan>{{Region::G_BN_BIAS, Region::G_DEEP_CONV}}));
    // NaN check over the gradients and the result, on COMP_1.
    const ComputationGraph& nan = *graphs_of(cp, GraphId::NAN_CHECK_AND_GRAD_SCALING).front();
    QCOMPARE(nan.nodes.front().range_op, RangeOp::NAN_CHECK);
    QCOMPARE(nan.nodes.front().stream, StreamKind::COMP_1);
    QVERIFY(nan.nodes.front().in_spans ==
            (std::vector<RegionSpan>{{Region::G_BN_BIAS, Region::R_RESULT}}));
    // SGD: one update over all kinds of W, G and M.
    const ComputationGraph& opt = *graphs_of(cp, GraphId::OPTIMIZER).front();
    QCOMPARE(opt.nodes.size(), size_t{1});
    QCOMPARE(opt.nodes[0].range_op, RangeOp::SGD_UPDATE);
    QVERIFY(opt.nodes[0].in_spans ==
            (std::vector<RegionSpan>{{Region::W_BN_BIAS, Region::W_DEEP_CONV},
                                     {Region::G_BN_BIAS, Region::G_DEEP_CONV},
                                     {Region::M_BN_BIAS, Region::M_DEEP_CONV}}));
    QVERIFY(opt.nodes[0].out_spans ==
            (std::vector<RegionSpan>{{Region::W_BN_BIAS, Region::W_DEEP_CONV},
                                     {Region::M_BN_BIAS, Region::M_DEEP_CONV}}));
    // One rank, FP32, SGD, no BN, no EMA: none of the optional graphs.
    for (GraphId id :
         {GraphId::DEEP_COMM, GraphId::FIRST_COMM, GraphId::VAL_RESULT_COMM, GraphId::STATS_COMM,
          GraphId::UPDATE_STATS, GraphId::UPDATE_BN_INF_PARAMS,
          GraphId::CAST_DEEP_GRAD_FP16_TO_FP32, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
          GraphId::CAST_MAIN_FP32_TO_FP16, GraphId::LARS_FC_OPT, GraphId::LARS_FIRST_CONV_OPT,
          GraphId::LARS_DEEP_CONV_OPT, GraphId::EMA_UPDATE})
      QVERIFY2(graphs_of(cp, id).empty(), graph_id_name(id).data());
    // Adam: bias correction (a scalar op on UPDATE) then one update with V.
    Project adam = small_cnn(false);
    adam.training.optimizer.kind = OptimizerKind::Adam;
    const CompiledProject ca = compile_or_fail(adam);
    const ComputationGraph& aopt = *graphs_of(ca, GraphId::OPTIMIZER).front();
    QCOMPARE(aopt.nodes.size(), size_t{2});
    QCOMPARE(aopt.nodes[0].op, ComputeOp::ADAM_BIAS_CORRECTION);
    QCOMPARE(aopt.nodes[0].stream, StreamKind::UPDATE);
    QCOMPARE(aopt.nodes[1].range_op, RangeOp::ADAM_UPDATE);
    QVERIFY(std::count(aopt.nodes[1].in_spans.begin(), aopt.nodes[1].in_spans.end(),
                       RegionSpan{Region::V_BN_BIAS, Region::V_DEEP_CONV}) == 1);
    // EMA adds its graph.
    Project ema = small_cnn(false);
    ema.training.ema = true;
    const CompiledProject ce = compile_or_fail(ema);
    QCOMPARE(graphs_of(ce, GraphId::EMA_UPDATE).size(), size_t{1});
    QVERIFY(graphs_of(ce, GraphId::EMA_UPDATE).front()->nodes.front().out_spans ==
            (std::vector<RegionSpan>{{Region::E_BN_BIAS, Region::E_DEEP_CONV}}));
    // Momentum 0: the update has no M span.
    Project plain = small_cnn(false);
    plain.training.optimizer.momentum = 0;
    const CompiledProject cpl = compile_or_fail(plain);
    QCOMPARE(graphs_of(cpl, GraphId::OPTIMIZER).front()->nodes.front().in_spans.size(), size_t{2});
  }

  void communicationOnlyWithSeveralRanks() {
    Project p = load("lenet-fashion");
    p.training.devices.ids = {0, 1};
    const CompiledProject cp = compile_or_fail(p);
    for (GraphId id : {GraphId::DEEP_COMM, GraphId::FIRST_COMM, GraphId::VAL_RESULT_COMM}) {
      const auto gs = graphs_of(cp, id);
      QVERIFY2(gs.size() == 1, graph_id_name(id).data());
      QCOMPARE(gs.front()->variant, -1);
      QVERIFY(gs.front()->shape_invariant);
      QCOMPARE(gs.front()->stream, StreamKind::UPDATE);
      QCOMPARE(gs.front()->nodes.size(), size_t{1});
      QCOMPARE(gs.front()->nodes[0].kind, NodeKind::RANGE);
      QVERIFY(is_collective(gs.front()->nodes[0].range_op));
      QCOMPARE(gs.front()->nodes[0].stream, StreamKind::UPDATE);
    }
    const GraphNode& deep = graphs_of(cp, GraphId::DEEP_COMM).front()->nodes[0];
    const GraphNode& first = graphs_of(cp, GraphId::FIRST_COMM).front()->nodes[0];
    QCOMPARE(deep.range_op, RangeOp::ALLREDUCE_MEAN);
    QCOMPARE(first.range_op, RangeOp::ALLREDUCE_MEAN);
    QCOMPARE(deep.in_spans.size(), size_t{1});
    QCOMPARE(first.in_spans.size(), size_t{1});
    QVERIFY(deep.in_spans == deep.out_spans);
    QVERIFY(first.in_spans == first.out_spans);
    for (const MemoryPlan& plan : cp.plans) {
      const ByteRange d = plan.region_range(deep.in_spans[0].first, deep.in_spans[0].last);
      const ByteRange f = plan.region_range(first.in_spans[0].first, first.in_spans[0].last);
      QCOMPARE(d, plan.comm_bucket_deep());
      QCOMPARE(f, plan.comm_bucket_first());
      QVERIFY(d.bytes > 0 && f.bytes > 0);
      // The two buckets are the gradients plus the result block, without overlap.
      QCOMPARE(f.end(), d.offset);
      QCOMPARE(d.end(), plan.region(Region::R_RESULT).base_offset +
                            plan.region(Region::R_RESULT).total_bytes);
    }
    const GraphNode& val = graphs_of(cp, GraphId::VAL_RESULT_COMM).front()->nodes[0];
    // The accumulated metrics and the confusion counts, in one sum.
    QVERIFY(val.in_spans ==
            (std::vector<RegionSpan>{{Region::R_RESULT_ACCUMULATED, Region::R_CONFUSION}}));
    QCOMPARE(val.range_op, RangeOp::ALLREDUCE_SUM);
    QVERIFY(graphs_of(cp, GraphId::STATS_COMM).empty());  // no BN in LeNet
    // The same project on one rank: none.
    const CompiledProject one = compile_or_fail(load("lenet-fashion"));
    for (GraphId id : {GraphId::DEEP_COMM, GraphId::FIRST_COMM, GraphId::VAL_RESULT_COMM})
      QVERIFY(graphs_of(one, id).empty());
  }

  // Every node carries what its kernel runs with, resolved from its layer
  // (GraphNode::params), and the compiled project the run's constants: a
  // kernel reads these, never the project.
  void nodesCarryTheirResolvedSettings() {
    Project p = load("cnn-bn-fashion");
    const int bn = p.model.find("bn1");
    QVERIFY(bn >= 0);
    p.model.nodes[static_cast<size_t>(bn)].params.eps = 1e-3;
    p.training.optimizer.momentum = 0.8;
    p.training.ema_decay = 0.99;
    p.training.precision = Precision::AMP;
    const CompiledProject cp = compile_or_fail(p);
    size_t layer_nodes = 0, bn_eq_nodes = 0;
    for (const ComputationGraph& g : cp.graphs)
      for (const GraphNode& n : g.nodes) {
        if (n.layer >= 0) {
          const LayerNode& l = cp.project.model.nodes[static_cast<size_t>(n.layer)];
          QCOMPARE(n.params.label, l.label());
          QCOMPARE(n.params.kernel_h, l.params.kernel_h);
          QCOMPARE(n.params.stride_w, l.params.stride_w);
          QCOMPARE(n.params.pad_h, l.params.pad_h);
          QCOMPARE(n.params.eps, l.params.eps);
          QCOMPARE(n.params.momentum, l.params.momentum);
          QCOMPARE(n.params.p, l.params.p);
          ++layer_nodes;
        } else {
          QVERIFY(n.params.label.empty());
        }
        if (n.kind == NodeKind::RANGE && n.range_op == RangeOp::BN_EQ_PARAMS) {
          QCOMPARE(n.params.eps_of(bn), 1e-3);
          QCOMPARE(n.params.eps_of(p.model.find("bn2")), 1e-5);
          ++bn_eq_nodes;
        }
      }
    QVERIFY(layer_nodes > 20);
    QCOMPARE(bn_eq_nodes, size_t{1});
    QCOMPARE(cp.constants.optimizer.momentum, 0.8);
    QCOMPARE(cp.constants.ema_decay, 0.99);
    QVERIFY(cp.constants.amp());
    QCOMPARE(cp.constants.sync_batch_norm, cp.project.training.sync_batch_norm);
  }

  // Both halves of every layer type's table entry are there: its shape rule
  // (model/layer_spec.h) and, unless it runs no kernel, its lowering; a
  // composite layer has its parts instead, and no lowering of its own.
  void everyLayerTypeHasItsTableEntries() {
    for (LayerType t : kAllLayerTypes) {
      const LayerSpec& spec = layer_spec(t);
      QCOMPARE(spec.type, t);
      QVERIFY2(spec.shape != nullptr, spec.name.data());
      QVERIFY2(!spec.name.empty() && !spec.id_base.empty() && !spec.description.empty(),
               spec.name.data());
      const LayerLowering& l = layer_lowering(t);
      const bool runs = t != LayerType::Input && !spec.parts;
      QCOMPARE(l.forward != nullptr, runs);
      QCOMPARE(l.backward != nullptr, runs && t != LayerType::SoftmaxCrossEntropy);
    }
  }

  void batchNormStatisticsGraphs() {
    const CompiledProject one = compile_or_fail(load("cnn-bn-fashion"));
    QVERIFY(graphs_of(one, GraphId::STATS_COMM).empty());
    QCOMPARE(graphs_of(one, GraphId::UPDATE_STATS).size(), size_t{1});
    QCOMPARE(graphs_of(one, GraphId::UPDATE_BN_INF_PARAMS).size(), size_t{1});
    const GraphNode& upd = graphs_of(one, GraphId::UPDATE_STATS).front()->nodes.at(0);
    QCOMPARE(upd.range_op, RangeOp::COPY);
    QVERIFY(upd.in_spans == (std::vector<RegionSpan>{{Region::B_NEXT_MEAN, Region::B_NEXT_VAR}}));
    QVERIFY(upd.out_spans == (std::vector<RegionSpan>{{Region::B_PREV_MEAN, Region::B_PREV_VAR}}));

    Project p = load("cnn-bn-fashion");
    p.training.devices.ids = {0, 1};
    // SyncBatchNorm (the project's choice) computes the same statistics on
    // every rank: nothing to all-reduce.
    QVERIFY(p.training.sync_batch_norm);
    QVERIFY(graphs_of(compile_or_fail(p), GraphId::STATS_COMM).empty());
    p.training.sync_batch_norm = false;
    const CompiledProject two = compile_or_fail(p);
    QCOMPARE(graphs_of(two, GraphId::STATS_COMM).size(), size_t{1});
    QCOMPARE(graphs_of(two, GraphId::UPDATE_STATS).size(), size_t{1});
    const GraphNode& stats = graphs_of(two, GraphId::STATS_COMM).front()->nodes.at(0);
    QVERIFY(is_collective(stats.range_op));
    QVERIFY(stats.in_spans == (std::vector<RegionSpan>{{Region::B_NEXT_MEAN, Region::B_NEXT_VAR}}));
    // B_NEXT_MEAN and B_NEXT_VAR are adjacent: one contiguous range holding all the stats.
    const MemoryPlan& plan = two.plans[0];
    QCOMPARE(
        plan.region_range(Region::B_NEXT_MEAN, Region::B_NEXT_VAR).bytes,
        plan.region(Region::B_NEXT_MEAN).total_bytes + plan.region(Region::B_NEXT_VAR).total_bytes);

    // SyncBatchNorm's sums (a communicator of their own on the compute
    // streams) run only inside DEEP_FWD_BWD, which the step finishes
    // (deep_done) before UPDATE starts a gradient all-reduce on the other
    // communicator: the two never run at once, which NCCL warns can deadlock.
    p.training.sync_batch_norm = true;
    const CompiledProject synced = compile_or_fail(p);
    size_t bn_training_nodes = 0;
    for (const ComputationGraph& g : synced.graphs)
      for (const GraphNode& n : g.nodes)
        if (n.kind == NodeKind::COMPUTE && is_bn_training(n.op)) {
          QCOMPARE(g.id, GraphId::DEEP_FWD_BWD);
          ++bn_training_nodes;
        }
    QVERIFY(bn_training_nodes > 0);

    // Without BN there are neither.
    Project lenet = load("lenet-fashion");
    lenet.training.devices.ids = {0, 1};
    const CompiledProject none = compile_or_fail(lenet);
    QVERIFY(graphs_of(none, GraphId::STATS_COMM).empty());
    QVERIFY(graphs_of(none, GraphId::UPDATE_STATS).empty());
    QVERIFY(graphs_of(none, GraphId::UPDATE_BN_INF_PARAMS).empty());
  }

  void ampAddsTheCasts() {
    Project p = load("cnn-bn-fashion");
    p.training.precision = Precision::AMP;
    const CompiledProject cp = compile_or_fail(p);
    for (GraphId id : {GraphId::CAST_DEEP_GRAD_FP16_TO_FP32, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
                       GraphId::CAST_MAIN_FP32_TO_FP16}) {
      const auto gs = graphs_of(cp, id);
      QVERIFY2(gs.size() == 1, graph_id_name(id).data());
      QCOMPARE(gs.front()->variant, -1);
      QVERIFY(gs.front()->shape_invariant);
      QCOMPARE(gs.front()->stream, StreamKind::UPDATE);
      QCOMPARE(gs.front()->nodes.size(), size_t{1});
      QCOMPARE(gs.front()->nodes[0].kind, NodeKind::RANGE);
      QCOMPARE(gs.front()->nodes[0].stream, StreamKind::UPDATE);
    }
    const GraphNode& main = graphs_of(cp, GraphId::CAST_MAIN_FP32_TO_FP16).front()->nodes[0];
    QCOMPARE(main.range_op, RangeOp::CAST_FP32_TO_FP16);
    // Batch norm's parameters have no 16-bit copy: the cast starts after them.
    QVERIFY(main.in_spans == (std::vector<RegionSpan>{{Region::W_FC_BIAS, Region::W_DEEP_CONV}}));
    QVERIFY(main.out_spans == (std::vector<RegionSpan>{{Region::A_FC_BIAS, Region::A_DEEP_CONV}}));
    for (const MemoryPlan& plan : cp.plans)
      QCOMPARE(plan.region_range(Region::W_FC_BIAS, Region::W_DEEP_CONV).bytes,
               2 * plan.region_range(Region::A_FC_BIAS, Region::A_DEEP_CONV).bytes);
    const GraphNode& deep = graphs_of(cp, GraphId::CAST_DEEP_GRAD_FP16_TO_FP32).front()->nodes[0];
    QCOMPARE(deep.range_op, RangeOp::CAST_FP16_TO_FP32);
    QVERIFY(deep.in_spans == (std::vector<RegionSpan>{{Region::H_DEEP_CONV, Region::H_DEEP_CONV}}));
    QVERIFY(deep.out_spans ==
            (std::vector<RegionSpan>{{Region::G_DEEP_CONV, Region::G_DEEP_CONV}}));
    const GraphNode& first = graphs_of(cp, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32).front()->nodes[0];
    QVERIFY(first.in_spans == (std::vector<RegionSpan>{{Region::H_FC_BIAS, Region::H_FIRST_CONV}}));
    QVERIFY(first.out_spans ==
            (std::vector<RegionSpan>{{Region::G_FC_BIAS, Region::G_FIRST_CONV}}));
    bnParametersStayFp32(cp);
    // ZERO_GRAD clears the FP16 gradients the backward writes, and batch
    // norm's FP32 ones.
    QVERIFY(graphs_of(cp, GraphId::ZERO_GRAD).front()->nodes[0].out_spans ==
            (std::vector<RegionSpan>{{Region::H_BN_BIAS, Region::H_DEEP_CONV},
                                     {Region::G_BN_BIAS, Region::G_BN_WEIGHT}}));
    // AMP unscales the gradients and updates the loss scale.
    const ComputationGraph& nan = *graphs_of(cp, GraphId::NAN_CHECK_AND_GRAD_SCALING).front();
    bool scale = false, update = false;
    for (const GraphNode& n : nan.nodes) {
      scale |= n.kind == NodeKind::RANGE && n.range_op == RangeOp::SCALE;
      update |= n.kind == NodeKind::COMPUTE && n.op == ComputeOp::LOSS_SCALE_UPDATE;
    }
    QVERIFY(scale && update);
    // The forward reads A, the backward writes H.
    const ComputationGraph* g = graph_in(cp, GraphId::DEEP_FWD_BWD, 0);
    QVERIFY(g);
    for (const GraphNode& n : g->nodes) {
      if (n.op == ComputeOp::CONV_FWD) QCOMPARE(region_of(cp, n.inputs[1]), Region::A_DEEP_CONV);
      if (n.op == ComputeOp::CONV_BWD) QCOMPARE(region_of(cp, n.outputs[0]), Region::H_DEEP_CONV);
      if (n.op == ComputeOp::BN_BWD) {
        QCOMPARE(region_of(cp, n.outputs[0]), Region::H_BN_WEIGHT);
        QCOMPARE(region_of(cp, n.outputs[1]), Region::H_BN_BIAS);
      }
    }
    const GraphNode& fb = graph_in(cp, GraphId::FIRST_LAYER_BWD_A, 0)->nodes[0];
    QCOMPARE(region_of(cp, fb.outputs[0]), Region::H_FIRST_CONV);
  }

  // BF16 has AMP's structure in bfloat16 (A and H series, 16-bit features),
  // but no loss scale: FP32's range needs none.
  void bf16PlanIsAmpInBfloat16WithoutLossScaling() {
    Project p = load("cnn-bn-fashion");
    p.training.precision = Precision::BF16;
    const CompiledProject cp = compile_or_fail(p);
    const struct {
      GraphId id;
      RangeOp op;
      RegionSpan in, out;
    } casts[] = {{GraphId::CAST_MAIN_FP32_TO_BF16,
                  RangeOp::CAST_FP32_TO_BF16,
                  {Region::W_FC_BIAS, Region::W_DEEP_CONV},
                  {Region::A_FC_BIAS, Region::A_DEEP_CONV}},
                 {GraphId::CAST_DEEP_GRAD_BF16_TO_FP32,
                  RangeOp::CAST_BF16_TO_FP32,
                  {Region::H_DEEP_CONV, Region::H_DEEP_CONV},
                  {Region::G_DEEP_CONV, Region::G_DEEP_CONV}},
                 {GraphId::CAST_FIRST_GRAD_BF16_TO_FP32,
                  RangeOp::CAST_BF16_TO_FP32,
                  {Region::H_FC_BIAS, Region::H_FIRST_CONV},
                  {Region::G_FC_BIAS, Region::G_FIRST_CONV}}};
    for (const auto& c : casts) {
      const auto gs = graphs_of(cp, c.id);
      QVERIFY2(gs.size() == 1, graph_id_name(c.id).data());
      QCOMPARE(gs.front()->stream, StreamKind::UPDATE);
      QCOMPARE(gs.front()->nodes.size(), size_t{1});
      QCOMPARE(gs.front()->nodes[0].range_op, c.op);
      QVERIFY(gs.front()->nodes[0].in_spans == std::vector<RegionSpan>{c.in});
      QVERIFY(gs.front()->nodes[0].out_spans == std::vector<RegionSpan>{c.out});
    }
    bnParametersStayFp32(cp);
    // None of the FP16 casts.
    for (GraphId id : {GraphId::CAST_MAIN_FP32_TO_FP16, GraphId::CAST_DEEP_GRAD_FP16_TO_FP32,
                       GraphId::CAST_FIRST_GRAD_FP16_TO_FP32})
      QVERIFY2(graphs_of(cp, id).empty(), graph_id_name(id).data());
    // The NaN check stays; nothing scales.
    const ComputationGraph& nan = *graphs_of(cp, GraphId::NAN_CHECK_AND_GRAD_SCALING).front();
    bool check = false;
    for (const GraphNode& n : nan.nodes) {
      check |= n.kind == NodeKind::RANGE && n.range_op == RangeOp::NAN_CHECK;
      QVERIFY(!(n.kind == NodeKind::RANGE && n.range_op == RangeOp::SCALE));
      QVERIFY(!(n.kind == NodeKind::COMPUTE && n.op == ComputeOp::LOSS_SCALE_UPDATE));
    }
    QVERIFY(check);
    QCOMPARE(cp.constants.amp(), false);
    // Every feature, gradient slot, input batch and 16-bit parameter is
    // bfloat16; the master weights, gradients and statistics FP32.
    for (const MemoryPlan& plan : cp.plans) {
      QVERIFY(plan.region(Region::F_FEATURE_FP16).tensors.empty());
      QVERIFY(plan.region(Region::F_FEATURE_FP32).tensors.empty());
      QVERIFY(!plan.region(Region::F_FEATURE_BF16).tensors.empty());
      QVERIFY(!plan.region(Region::F_GRAD_SLOT_BF16).tensors.empty());
      for (const DTensor& t : plan.dtensors()) {
        const char s = region_series(t.region);
        const bool sixteen = s == 'A' || s == 'H' || t.region == Region::I_A_DATA ||
                             t.region == Region::I_B_DATA || t.region == Region::F_FEATURE_BF16 ||
                             t.region == Region::F_GRAD_SLOT_BF16;
        if (sixteen) QVERIFY2(t.dtype == DType::BF16, t.name.c_str());
        if (s == 'W' || s == 'G' || s == 'B') QVERIFY2(t.dtype == DType::FP32, t.name.c_str());
      }
      QCOMPARE(plan.region_range(Region::G_FC_BIAS, Region::G_DEEP_CONV).bytes,
               2 * plan.region_range(Region::H_BN_BIAS, Region::H_DEEP_CONV).bytes);
    }
    // The same bytes as AMP: only the 16-bit type differs.
    p.training.precision = Precision::AMP;
    const CompiledProject amp = compile_or_fail(p);
    QCOMPARE(cp.bytes_per_device(), amp.bytes_per_device());
  }

  void larsGraphsOnThreeComputeStreams() {
    Project p = load("cnn-bn-fashion");
    p.training.optimizer.kind = OptimizerKind::LARS;
    const CompiledProject cp = compile_or_fail(p);
    const struct {
      GraphId id;
      StreamKind stream;
      Region norms;
      Region weights;
    } expected[] = {{GraphId::LARS_FC_OPT, StreamKind::COMP_1, Region::N_FC, Region::W_FC_BIAS},
                    {GraphId::LARS_FIRST_CONV_OPT, StreamKind::COMP_2, Region::N_FIRST_CONV,
                     Region::W_FIRST_CONV},
                    {GraphId::LARS_DEEP_CONV_OPT, StreamKind::COMP_3, Region::N_DEEP_CONV,
                     Region::W_DEEP_CONV}};
    for (const auto& e : expected) {
      const auto gs = graphs_of(cp, e.id);
      QVERIFY2(gs.size() == 1, graph_id_name(e.id).data());
      const ComputationGraph& g = *gs.front();
      QCOMPARE(g.variant, -1);
      QVERIFY(g.shape_invariant);
      QCOMPARE(g.stream, e.stream);
      QCOMPARE(stream_for(e.id), e.stream);
      QVERIFY(!g.nodes.empty());
      bool norms = false, update = false;
      for (const GraphNode& n : g.nodes) {
        QCOMPARE(n.kind, NodeKind::RANGE);
        QCOMPARE(n.stream, e.stream);
        QCOMPARE(n.in_spans.front().first, e.weights);
        if (n.range_op == RangeOp::LARS_NORMS) {
          norms = true;
          QVERIFY(n.out_spans == (std::vector<RegionSpan>{{e.norms, e.norms}}));
        }
        if (n.range_op == RangeOp::LARS_UPDATE) {
          update = true;
          QVERIFY(std::count(n.in_spans.begin(), n.in_spans.end(), RegionSpan{e.norms, e.norms}) ==
                  1);
        }
      }
      QVERIFY(norms && update);
    }
    // BN parameters keep a plain update in OPTIMIZER.
    const auto opt = graphs_of(cp, GraphId::OPTIMIZER);
    QCOMPARE(opt.size(), size_t{1});
    QCOMPARE(opt.front()->nodes.front().range_op, RangeOp::SGD_UPDATE);
    QCOMPARE(opt.front()->nodes.front().in_spans.front(),
             (RegionSpan{Region::W_BN_BIAS, Region::W_BN_WEIGHT}));
    // LeNet has no BN: the three LARS graphs replace OPTIMIZER.
    Project l = load("lenet-fashion");
    l.training.optimizer.kind = OptimizerKind::LARS;
    const CompiledProject cl = compile_or_fail(l);
    QVERIFY(graphs_of(cl, GraphId::OPTIMIZER).empty());
    QCOMPARE(graphs_of(cl, GraphId::LARS_FC_OPT).size(), size_t{1});
    QCOMPARE(graphs_of(cl, GraphId::LARS_FIRST_CONV_OPT).size(), size_t{1});
    QCOMPARE(graphs_of(cl, GraphId::LARS_DEEP_CONV_OPT).size(), size_t{1});
    // Without LARS there are none.
    QVERIFY(graphs_of(compile_or_fail(load("lenet-fashion")), GraphId::LARS_FC_OPT).empty());
  }

  void optimizerDoesNotGrowWithDepth() {
    const CompiledProject r8 = compile_or_fail(load("resnet8-fashion"));
    const CompiledProject r20 = compile_or_fail(load("resnet20"));
    QVERIFY(r20.plans[0].region(Region::W_DEEP_CONV).tensors.size() >
            2 * r8.plans[0].region(Region::W_DEEP_CONV).tensors.size());
    for (GraphId id : {GraphId::OPTIMIZER, GraphId::ZERO_GRAD, GraphId::NAN_CHECK_AND_GRAD_SCALING,
                       GraphId::UPDATE_STATS}) {
      const auto a = graphs_of(r8, id);
      const auto b = graphs_of(r20, id);
      QCOMPARE(a.size(), size_t{1});
      QCOMPARE(b.size(), size_t{1});
      QCOMPARE(a.front()->nodes.size(), b.front()->nodes.size());
    }
    QCOMPARE(graphs_of(r8, GraphId::OPTIMIZER).front()->nodes.size(), size_t{1});
    // ... while the per-layer graph does grow.
    QVERIFY(graph_in(r20, GraphId::DEEP_FWD_BWD, 0)->nodes.size() >
            graph_in(r8, GraphId::DEEP_FWD_BWD, 0)->nodes.size());
  }

  // ---- streams ---------------------------------------------------------------

  void streamPolicy() {
    auto op = [](ComputeOp o) {
      GraphNode n;
      n.kind = NodeKind::COMPUTE;
      n.op = o;
      return stream_for(n);
    };
    auto range = [](RangeOp o, Region first = Region::W_BN_BIAS) {
      GraphNode n;
      n.kind = NodeKind::RANGE;
      n.range_op = o;
      n.in_spans = {{first, first}};
      return stream_for(n);
    };
    for (ComputeOp o :
         {ComputeOp::CONV_FWD, ComputeOp::LINEAR_FWD, ComputeOp::SOFTMAX_CE_FWD_BWD,
          ComputeOp::SOFTMAX_CE_FWD, ComputeOp::CONV_BWD_FIRST, ComputeOp::LINEAR_BWD_FIRST})
      QCOMPARE(op(o), StreamKind::COMP_1);
    for (ComputeOp o : {ComputeOp::BN_FWD_TRAIN, ComputeOp::BN_FWD_INFER, ComputeOp::BN_BWD,
                        ComputeOp::MAXPOOL_FWD, ComputeOp::MAXPOOL_BWD, ComputeOp::AVGPOOL_FWD,
                        ComputeOp::AVGPOOL_BWD, ComputeOp::DROPOUT_FWD, ComputeOp::DROPOUT_BWD})
      QCOMPARE(op(o), StreamKind::COMP_2);
    for (ComputeOp o : {ComputeOp::RELU_FWD, ComputeOp::RELU_BWD, ComputeOp::ACTIVATION_FWD,
                        ComputeOp::ACTIVATION_BWD})
      QCOMPARE(op(o), StreamKind::COMP_3);
    // conv/linear backward: COMP_3 represents the forked op.
    QCOMPARE(op(ComputeOp::CONV_BWD), StreamKind::COMP_3);
    QCOMPARE(op(ComputeOp::LINEAR_BWD), StreamKind::COMP_3);
    QCOMPARE(op(ComputeOp::H2D_INPUT), StreamKind::TRANS);
    QCOMPARE(op(ComputeOp::LOSS_SCALE_UPDATE), StreamKind::UPDATE);
    QCOMPARE(op(ComputeOp::ADAM_BIAS_CORRECTION), StreamKind::UPDATE);

    for (RangeOp o : {RangeOp::CLEAR, RangeOp::CAST_FP32_TO_FP16, RangeOp::CAST_FP16_TO_FP32,
                      RangeOp::ALLREDUCE_MEAN, RangeOp::ALLREDUCE_SUM, RangeOp::EMA_UPDATE,
                      RangeOp::SGD_UPDATE, RangeOp::ADAM_UPDATE, RangeOp::COPY, RangeOp::SCALE,
                      RangeOp::ACCUMULATE, RangeOp::BN_EQ_PARAMS})
      QCOMPARE(range(o), StreamKind::UPDATE);
    QCOMPARE(range(RangeOp::NAN_CHECK, Region::G_BN_BIAS), StreamKind::COMP_1);
    for (RangeOp o : {RangeOp::LARS_NORMS, RangeOp::LARS_UPDATE}) {
      QCOMPARE(range(o, Region::W_FC_BIAS), StreamKind::COMP_1);
      QCOMPARE(range(o, Region::W_FC_WEIGHT), StreamKind::COMP_1);
      QCOMPARE(range(o, Region::W_FIRST_CONV), StreamKind::COMP_2);
      QCOMPARE(range(o, Region::W_DEEP_CONV), StreamKind::COMP_3);
    }

    // The fork: dW on COMP_1, dB on COMP_2 (only with a bias), dX on COMP_3 after dW.
    for (ComputeOp o : {ComputeOp::CONV_BWD, ComputeOp::LINEAR_BWD}) {
      const auto with = fork_parts(o, true);
      QCOMPARE(with.size(), size_t{3});
      QCOMPARE(with[0].part, BwdPart::DW);
      QCOMPARE(with[0].stream, StreamKind::COMP_1);
      QCOMPARE(with[0].after, -1);
      QCOMPARE(with[1].part, BwdPart::DB);
      QCOMPARE(with[1].stream, StreamKind::COMP_2);
      QCOMPARE(with[1].after, -1);
      QCOMPARE(with[2].part, BwdPart::DX);
      QCOMPARE(with[2].stream, StreamKind::COMP_3);
      QCOMPARE(with[static_cast<size_t>(with[2].after)].part, BwdPart::DW);
      const auto without = fork_parts(o, false);
      QCOMPARE(without.size(), size_t{2});
      QCOMPARE(without[0].part, BwdPart::DW);
      QCOMPARE(without[1].part, BwdPart::DX);
      QCOMPARE(without[1].stream, StreamKind::COMP_3);
      QCOMPARE(without[static_cast<size_t>(without[1].after)].part, BwdPart::DW);
    }
    for (ComputeOp o : {ComputeOp::CONV_FWD, ComputeOp::CONV_BWD_FIRST, ComputeOp::BN_BWD,
                        ComputeOp::RELU_BWD, ComputeOp::LINEAR_BWD_FIRST})
      QVERIFY(fork_parts(o, true).empty());

    // Graph streams per GraphId.
    QCOMPARE(stream_for(GraphId::TRANSFER_A), StreamKind::TRANS);
    QCOMPARE(stream_for(GraphId::TRANSFER_B), StreamKind::TRANS);
    for (GraphId id : {GraphId::FIRST_LAYER_FWD_A, GraphId::FIRST_LAYER_FWD_B,
                       GraphId::DEEP_FWD_BWD, GraphId::FIRST_LAYER_BWD_A,
                       GraphId::FIRST_LAYER_BWD_B, GraphId::INF_MAIN_A, GraphId::INF_MAIN_B})
      QCOMPARE(stream_for(id), StreamKind::COMP_1);
    for (GraphId id :
         {GraphId::ZERO_GRAD, GraphId::DEEP_COMM, GraphId::FIRST_COMM,
          GraphId::CAST_DEEP_GRAD_FP16_TO_FP32, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32,
          GraphId::NAN_CHECK_AND_GRAD_SCALING, GraphId::METRIC_ACCUMULATE, GraphId::STATS_COMM,
          GraphId::UPDATE_STATS, GraphId::OPTIMIZER, GraphId::EMA_UPDATE,
          GraphId::CAST_MAIN_FP32_TO_FP16, GraphId::UPDATE_BN_INF_PARAMS, GraphId::VAL_RESULT_COMM,
          GraphId::RESET_METRICS})
      QCOMPARE(stream_for(id), StreamKind::UPDATE);
    QCOMPARE(stream_for(GraphId::LARS_FC_OPT), StreamKind::COMP_1);
    QCOMPARE(stream_for(GraphId::LARS_FIRST_CONV_OPT), StreamKind::COMP_2);
    QCOMPARE(stream_for(GraphId::LARS_DEEP_CONV_OPT), StreamKind::COMP_3);
  }

  void compiledNodesFollowThePolicy() {
    Project amp = load("resnet8-fashion");
    amp.training.precision = Precision::AMP;
    amp.training.devices.ids = {0, 1};
    Project lars = load("lenet-fashion");
    lars.training.optimizer.kind = OptimizerKind::LARS;
    for (const Project& p : {load("lenet-fashion"), load("cnn-bn-fashion"), amp, lars, mlp(),
                             small_cnn(false), small_cnn(true)}) {
      const CompiledProject cp = compile_or_fail(p);
      int forks = 0;
      for (const ComputationGraph& g : cp.graphs) {
        QCOMPARE(g.stream, stream_for(g.id));
        for (const GraphNode& n : g.nodes) {
          QCOMPARE(n.stream, stream_for(n));
          if (n.kind == NodeKind::COMPUTE &&
              (n.op == ComputeOp::CONV_BWD || n.op == ComputeOp::LINEAR_BWD)) {
            const DTensorId bias = cp.layers[static_cast<size_t>(n.layer)].bias_in(
                p.training.precision == Precision::AMP ? ParamSeries::H : ParamSeries::G);
            const auto want = fork_parts(n.op, bias != kNoTensor);
            QCOMPARE(n.fork.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i) {
              QCOMPARE(n.fork[i].part, want[i].part);
              QCOMPARE(n.fork[i].stream, want[i].stream);
              QCOMPARE(n.fork[i].after, want[i].after);
            }
            ++forks;
          } else {
            QVERIFY(n.fork.empty());
          }
        }
      }
      QVERIFY(forks > 0);
    }
  }

  // ---- DEEP_FWD_BWD ---------------------------------------------------------

  void deepForwardBackwardOfResnet8() {
    const CompiledProject cp = compile_or_fail(load("resnet8-fashion"), kPlain);
    const int stem = node_index(cp, "conv1");
    QCOMPARE(cp.analysis.first_layer, stem);
    for (size_t v = 0; v < 2; ++v) {  // train and last batch
      const ComputationGraph* g = graph_in(cp, GraphId::DEEP_FWD_BWD, static_cast<int>(v));
      QVERIFY(g);
      const MemoryPlan& plan = cp.plans[v];
      // The stem is in neither the forward nor the backward.
      for (const GraphNode& n : g->nodes) {
        QVERIFY(n.layer != stem);
        QVERIFY(n.layer != cp.analysis.input_node);
        QVERIFY(n.op != ComputeOp::CONV_BWD_FIRST);
        for (DTensorId o : n.outputs) {
          QVERIFY(o != layer(cp, "conv1").weight_in(ParamSeries::G));
          QVERIFY(o != cp.engine.input[0] && o != cp.engine.input[1]);
        }
        for (DTensorId i : n.inputs) QVERIFY(i != cp.engine.input[0] && i != cp.engine.input[1]);
      }
      // One forward per layer after the stem, one backward per layer between stem and loss.
      size_t layers = 0;
      for (size_t i = 0; i < cp.project.model.nodes.size(); ++i)
        if (static_cast<int>(i) != stem && static_cast<int>(i) != cp.analysis.input_node) ++layers;
      QCOMPARE(g->nodes.size(), 2 * layers - 1);

      // Walk in order: every gradient slot is written before it is read; a
      // write that does not accumulate is the first write of that slot this
      // step, one that accumulates comes after the first.
      std::set<DTensorId> written;
      std::map<DTensorId, std::vector<std::pair<size_t, size_t>>>
          writers;  // slot -> (node, output)
      bool loss_seen = false;
      for (size_t k = 0; k < g->nodes.size(); ++k) {
        const GraphNode& n = g->nodes[k];
        for (DTensorId i : n.inputs)
          if (is_grad_slot(plan.get_dtensor(i).region))
            QVERIFY2(written.count(i), (plan.get_dtensor(i).name + " read before written").c_str());
        for (size_t o = 0; o < n.outputs.size(); ++o) {
          const DTensorId t = n.outputs[o];
          if (!is_grad_slot(plan.get_dtensor(t).region)) continue;
          const bool acc = (n.accumulate_mask >> o) & 1u;
          QVERIFY2(acc == (written.count(t) == 1), plan.get_dtensor(t).name.c_str());
          written.insert(t);
          writers[t].push_back({k, o});
        }
        if (n.op == ComputeOp::SOFTMAX_CE_FWD_BWD) {
          loss_seen = true;
          QCOMPARE(n.outputs.size(), size_t{2});
          QCOMPARE(n.outputs[1], layer(cp, "fc").grad);  // the logits' gradient
          QCOMPARE(n.inputs[1], cp.engine.active_labels);
          QCOMPARE(n.accumulate_mask, uint8_t{0});
        }
        QVERIFY(loss_seen || (n.op != ComputeOp::CONV_BWD && n.op != ComputeOp::BN_BWD &&
                              n.op != ComputeOp::ADD_BWD && n.op != ComputeOp::RELU_BWD));
      }
      QVERIFY(loss_seen);
      // The stem's output gradient is produced here for FIRST_LAYER_BWD.
      QVERIFY(written.count(layer(cp, "conv1").grad));
      // Every layer's output gradient gets one write per consumer edge.
      for (size_t i = 0; i < cp.project.model.nodes.size(); ++i) {
        if (static_cast<int>(i) == cp.analysis.input_node ||
            static_cast<int>(i) == cp.analysis.loss_node)
          continue;
        QCOMPARE(writers[cp.layers[i].grad].size(), cp.analysis.consumers[i].size());
      }
      // Residual fan-out: relu1 feeds s1b1_conv1 and s1b1_add.
      const auto& fan = writers[layer(cp, "relu1").grad];
      QCOMPARE(fan.size(), size_t{2});
      const GraphNode& w1 = g->nodes[fan[0].first];
      const GraphNode& w2 = g->nodes[fan[1].first];
      std::set<int> by{w1.layer, w2.layer};
      QVERIFY(by == (std::set<int>{node_index(cp, "s1b1_conv1"), node_index(cp, "s1b1_add")}));
      QCOMPARE(w1.accumulate_mask & (1u << fan[0].second), 0u);
      QVERIFY(w2.accumulate_mask & (1u << fan[1].second));
      // Only that output accumulates.
      QCOMPARE(static_cast<unsigned>(w2.accumulate_mask), 1u << fan[1].second);
      // The shortcut of stage 2 reads s1b1_relu along with the block's first conv.
      const auto& fan2 = writers[layer(cp, "s1b1_relu").grad];
      QCOMPARE(fan2.size(), size_t{2});
      QCOMPARE(g->nodes[fan2[0].first].op, ComputeOp::CONV_BWD);
      QCOMPARE(g->nodes[fan2[1].first].op, ComputeOp::CONV_BWD);
      QVERIFY(g->nodes[fan2[1].first].accumulate_mask & (1u << fan2[1].second));
      // The Add's backward passes the gradient to both branches.
      bool add_bwd = false;
      for (const GraphNode& n : g->nodes)
        if (n.op == ComputeOp::ADD_BWD && n.layer == node_index(cp, "s2b1_add")) {
          add_bwd = true;
          QVERIFY(n.outputs == (std::vector<DTensorId>{layer(cp, "s2b1_bn2").grad,
                                                       layer(cp, "s2b1_sc_bn").grad}));
          QCOMPARE(n.accumulate_mask, uint8_t{0});
        }
      QVERIFY(add_bwd);
    }
    // x + x: one Add reading the same tensor on both ports accumulates its second output.
    ModelBuilder b = synthetic_builder();
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("relu", LayerType::ReLU)
        .node("add", LayerType::Add)
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "relu"})
        .edge("relu", "add", 0)
        .edge("relu", "add", 1)
        .chain({"add", "gap", "fc", "loss"});
    const CompiledProject xx = compile_or_fail(b.build());
    bool seen = false;
    for (const GraphNode& n : graph_in(xx, GraphId::DEEP_FWD_BWD, 0)->nodes)
      if (n.op == ComputeOp::ADD_BWD) {
        seen = true;
        QCOMPARE(n.outputs[0], n.outputs[1]);
        QCOMPARE(static_cast<unsigned>(n.accumulate_mask), 2u);
      }
    QVERIFY(seen);
  }

  void mlpFirstLayerIsLinear() {
    const CompiledProject cp = compile_or_fail(mlp());
    QCOMPARE(cp.analysis.first_layer, node_index(cp, "fc1"));
    QCOMPARE(region_of(cp, layer(cp, "fc1").weight_in(ParamSeries::W)), Region::W_FC_WEIGHT);
    QCOMPARE(cp.plans[0].get_dtensor(layer(cp, "fc1").weight_in(ParamSeries::W)).shape,
             (Shape{16, 1, 1, 64}));
    const ComputationGraph* b = graph_in(cp, GraphId::FIRST_LAYER_BWD_A, 0);
    QVERIFY(b);
    QCOMPARE(b->nodes.size(), size_t{1});
    QCOMPARE(b->nodes[0].op, ComputeOp::LINEAR_BWD_FIRST);
    QCOMPARE(b->nodes[0].stream, StreamKind::COMP_1);
    const ComputationGraph* f = graph_in(cp, GraphId::FIRST_LAYER_FWD_A, 0);
    QCOMPARE(f->nodes.back().op, ComputeOp::LINEAR_FWD);
    for (const GraphNode& n : graph_in(cp, GraphId::DEEP_FWD_BWD, 0)->nodes)
      QVERIFY(n.layer != cp.analysis.first_layer);
  }

  // ---- tensors referenced by graphs ----------------------------------------

  void graphTensorsExistAndSharedGraphsAreShapeFree() {
    Project amp = load("resnet8-fashion");
    amp.training.precision = Precision::AMP;
    amp.training.devices.ids = {0, 1};
    amp.training.ema = true;
    Project adam = load("cnn-bn-fashion");
    adam.training.optimizer.kind = OptimizerKind::Adam;
    Project lars = load("cnn-bn-fashion");
    lars.training.optimizer.kind = OptimizerKind::LARS;
    lars.training.devices.ids = {0, 1};
    for (const Project& p : {load("lenet-fashion"), load("cnn-bn-fashion"), load("resnet8-fashion"),
                             amp, adam, lars, small_cnn(false), small_cnn(true), mlp()}) {
      const CompiledProject cp = compile_or_fail(p);
      QVERIFY(!cp.graphs.empty());
      for (const ComputationGraph& g : cp.graphs) {
        QVERIFY(g.variant >= -1 && g.variant < static_cast<int>(cp.plans.size()));
        QCOMPARE(g.variant < 0, g.shape_invariant);
        const MemoryPlan& plan = cp.plans[static_cast<size_t>(std::max(g.variant, 0))];
        for (const GraphNode& n : g.nodes) {
          for (const auto* ids : {&n.inputs, &n.outputs})
            for (DTensorId id : *ids) {
              QVERIFY2(id >= 0 && static_cast<size_t>(id) < plan.dtensors().size(),
                       (std::string(graph_id_name(g.id)) + ": missing tensor").c_str());
              QCOMPARE(plan.get_dtensor(id).id, id);
            }
          for (const auto* spans : {&n.in_spans, &n.out_spans})
            for (const RegionSpan& s : *spans)
              QVERIFY(region_index(s.first) <= region_index(s.last));
          if (n.kind == NodeKind::RANGE) {
            QVERIFY(!n.in_spans.empty() || !n.out_spans.empty());
          } else {
            QVERIFY(!n.inputs.empty() || !n.outputs.empty());
          }
          if (!g.shape_invariant) continue;
          // Shared graphs: tensors and spans are the same bytes in every variant.
          for (const auto* ids : {&n.inputs, &n.outputs})
            for (DTensorId id : *ids) {
              const DTensor& t = plan.get_dtensor(id);
              QVERIFY2(!shape_dependent_region(t.region), t.name.c_str());
              for (const MemoryPlan& other : cp.plans)
                QCOMPARE(other.get_dtensor(id).shape, t.shape);
            }
          for (const auto* spans : {&n.in_spans, &n.out_spans})
            for (const RegionSpan& s : *spans) {
              for (int r = region_index(s.first); r <= region_index(s.last); ++r)
                QVERIFY2(!shape_dependent_region(static_cast<Region>(r)),
                         region_name(static_cast<Region>(r)).data());
              for (const MemoryPlan& other : cp.plans)
                QCOMPARE(other.region_range(s.first, s.last), plan.region_range(s.first, s.last));
            }
        }
      }
    }
  }

  void graphText() {
    const CompiledProject cp = compile_or_fail(load("lenet-fashion"));
    const ComputationGraph* deep = graph_in(cp, GraphId::DEEP_FWD_BWD, 0);
    const std::string text = graph_to_text(*deep, cp.plans[0], cp.project.model, "train");
    for (const char* want :
         {"graph DEEP_FWD_BWD", "variant=train", "stream=COMP_1", "CONV_FWD", "RELU_BWD",
          "SOFTMAX_CE_FWD_BWD", "LINEAR_BWD", "conv2", "fc3", "conv2.weight", "[16,5,5,6]",
          "pool1.out[128,14,14,6]", "fork: dW@COMP_1 dB@COMP_2 dX@COMP_3(after dW)"})
      QVERIFY2(text.find(want) != std::string::npos, want);
    // Each node line ends with its layer id: conv2 is there, the stem is not.
    QVERIFY(text.find(" conv2\n") != std::string::npos);
    QVERIFY(text.find(" conv1\n") == std::string::npos);
    QVERIFY(text.find("nodes=" + std::to_string(deep->nodes.size())) != std::string::npos);
    // The validation plan shows its own batch.
    const ComputationGraph* inf = graph_in(cp, GraphId::INF_MAIN_A, 2);
    const std::string vt = graph_to_text(*inf, cp.plans[2], cp.project.model, "val");
    QVERIFY(vt.find("graph INF_MAIN_A") != std::string::npos);
    QVERIFY(vt.find("pool1.out[125,14,14,6]") != std::string::npos);
    QVERIFY(vt.find("SOFTMAX_CE_FWD ") != std::string::npos);
    // Shared graphs print spans.
    const ComputationGraph& opt = *graphs_of(cp, GraphId::OPTIMIZER).front();
    const std::string ot = graph_to_text(opt, cp.plans[0], cp.project.model, "train");
    for (const char* want : {"graph OPTIMIZER", "variant=*", "shape-invariant", "SGD_UPDATE",
                             "RANGE", "W_BN_BIAS..W_DEEP_CONV", "(engine)"})
      QVERIFY2(ot.find(want) != std::string::npos, want);
    // Residual accumulation is visible.
    const CompiledProject r8 = compile_or_fail(load("resnet8-fashion"));
    const std::string rt = graph_to_text(*graph_in(r8, GraphId::DEEP_FWD_BWD, 0), r8.plans[0],
                                         r8.project.model, "train");
    QVERIFY(rt.find("accumulates into output(s) with mask") != std::string::npos);
    QVERIFY(rt.find("ADD_RELU_BWD") != std::string::npos);
    QVERIFY(rt.find("BN_FWD_TRAIN") != std::string::npos);
  }

  // ---- fusion and in-place gradients ----------------------------------------

  void bnReluFusion() {
    const CompiledProject cp = compile_or_fail(load("cnn-bn-fashion"));
    const CompiledProject plain = compile_or_fail(load("cnn-bn-fashion"), kPlain);
    for (const char* bn : {"bn1", "bn2", "bn3", "bn4"}) {
      const std::string relu = std::string("relu") + bn[2];
      QCOMPARE(layer(cp, bn).fused_relu, node_index(cp, relu));
      QCOMPARE(layer(cp, relu).fused_into, node_index(cp, bn));
      // The BN has no output of its own: it writes the ReLU's.
      QCOMPARE(layer(cp, bn).out, layer(cp, relu).out);
      QCOMPARE(layer(plain, bn).fused_relu, -1);
      QVERIFY(layer(plain, bn).out != layer(plain, relu).out);
    }
    auto ops_in = [](const ComputationGraph& g) {
      std::map<ComputeOp, int> n;
      for (const GraphNode& x : g.nodes)
        if (x.kind == NodeKind::COMPUTE) ++n[x.op];
      return n;
    };
    auto deep = ops_in(*graph_in(cp, GraphId::DEEP_FWD_BWD, 0));
    QCOMPARE(deep[ComputeOp::BN_RELU_FWD_TRAIN], 4);
    QCOMPARE(deep[ComputeOp::BN_RELU_BWD], 4);
    QCOMPARE(deep[ComputeOp::BN_FWD_TRAIN] + deep[ComputeOp::BN_BWD], 0);
    QCOMPARE(deep[ComputeOp::RELU_FWD] + deep[ComputeOp::RELU_BWD], 0);
    const size_t plain_nodes = graph_in(plain, GraphId::DEEP_FWD_BWD, 0)->nodes.size();
    QCOMPARE(graph_in(cp, GraphId::DEEP_FWD_BWD, 0)->nodes.size(), plain_nodes - 8);
    auto inf =
        ops_in(*graph_in(cp, GraphId::INF_MAIN_A, cp.variant_index(VariantKind::Validation)));
    QCOMPARE(inf[ComputeOp::BN_RELU_FWD_INFER], 4);
    QCOMPARE(inf[ComputeOp::BN_FWD_INFER] + inf[ComputeOp::RELU_FWD], 0);
    // The fused backward reads beta too (to recompute the mask) and writes dgamma, dbeta, dx.
    for (const GraphNode& n : graph_in(cp, GraphId::DEEP_FWD_BWD, 0)->nodes) {
      if (n.op != ComputeOp::BN_RELU_BWD) continue;
      const LayerTensors& t = cp.layers[static_cast<size_t>(n.layer)];
      const LayerTensors& r = cp.layers[static_cast<size_t>(t.fused_relu)];
      QCOMPARE(n.inputs.size(), size_t{5});
      QCOMPARE(n.inputs[2], t.bias_in(ParamSeries::W));
      QCOMPARE(n.inputs[4], r.grad);
      QCOMPARE(n.outputs[0], t.weight_in(ParamSeries::G));
      QCOMPARE(n.stream, StreamKind::COMP_2);
    }
  }

  void addReluFusion() {
    // resnet8's three residual joins: each Add computes its ReLU.
    const CompiledProject cp = compile_or_fail(load("resnet8-fashion"));
    CompileOptions apart;
    apart.fuse_add_relu = false;
    const CompiledProject unfused = compile_or_fail(load("resnet8-fashion"), apart);
    for (const char* stage : {"s1b1", "s2b1", "s3b1"}) {
      const std::string add = std::string(stage) + "_add", relu = std::string(stage) + "_relu";
      QCOMPARE(layer(cp, add.c_str()).fused_relu, node_index(cp, relu.c_str()));
      QCOMPARE(layer(cp, relu.c_str()).fused_into, node_index(cp, add.c_str()));
      QCOMPARE(layer(cp, add.c_str()).out, layer(cp, relu.c_str()).out);
      QCOMPARE(layer(unfused, add.c_str()).fused_relu, -1);
    }
    std::map<ComputeOp, int> ops;
    for (const GraphNode& n : graph_in(cp, GraphId::DEEP_FWD_BWD, 0)->nodes) {
      if (n.kind == NodeKind::COMPUTE) ++ops[n.op];
      if (n.op != ComputeOp::ADD_RELU_BWD || n.layer != node_index(cp, "s2b1_add")) continue;
      // The mask from the ReLU's output; both branches' gradients.
      QVERIFY(n.inputs ==
              (std::vector<DTensorId>{layer(cp, "s2b1_relu").grad, layer(cp, "s2b1_relu").out}));
      QVERIFY(n.outputs ==
              (std::vector<DTensorId>{layer(cp, "s2b1_bn2").grad, layer(cp, "s2b1_sc_bn").grad}));
    }
    QCOMPARE(ops[ComputeOp::ADD_RELU_FWD], 3);
    QCOMPARE(ops[ComputeOp::ADD_RELU_BWD], 3);
    QCOMPARE(ops[ComputeOp::ADD_FWD] + ops[ComputeOp::ADD_BWD], 0);
    QCOMPARE(ops[ComputeOp::RELU_FWD] + ops[ComputeOp::RELU_BWD], 0);  // the rest are BN's
    // No more bytes live at once (how the greedy packing then places them
    // differs: 67.58 MiB against 66.05 here, the floor 62.80 for both).
    QCOMPARE(cp.pools.front().peak_live_bytes, unfused.pools.front().peak_live_bytes);
    const ComputationGraph* inference =
        graph_in(cp, GraphId::INF_MAIN_A, cp.variant_index(VariantKind::Validation));
    QCOMPARE(std::count_if(inference->nodes.begin(), inference->nodes.end(),
                           [](const GraphNode& n) { return n.op == ComputeOp::ADD_RELU_FWD; }),
             3);

    // The fused backward reads the ReLU's output: that output takes no
    // in-place gradient from its one convolution, which it would unfused.
    ModelBuilder b = synthetic_builder();
    b.node("input", LayerType::Input, input(8, 8, 1))
        .node("conv1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("relu1", LayerType::ReLU)
        .node("conv2", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("relu2", LayerType::ReLU)
        .node("conv3", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("gap", LayerType::GlobalAvgPool)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "conv1", "relu1", "conv2", "add", "relu2", "conv3", "gap", "fc", "loss"})
        .edge("relu1", "add", 1);
    const Project joined = b.build();
    const CompiledProject fused = compile_or_fail(joined);
    QCOMPARE(layer(fused, "add").fused_relu, node_index(fused, "relu2"));
    QVERIFY(!layer(fused, "relu2").grad_in_place);
    QVERIFY(layer(compile_or_fail(joined, apart), "relu2").grad_in_place);
  }

  void inPlaceGradients() {
    // cnn-bn: relu1 and relu3 (computed by the fused BN) and the global pool
    // feed only a conv or FC layer: their gradient is written over them;
    // so does pool1, whose backward reads where its maxima were, not its
    // output. relu2/relu4 feed a max-pool, not a conv or FC layer.
    const CompiledProject cp = compile_or_fail(load("cnn-bn-fashion"));
    for (const char* id : {"relu1", "relu3", "gap", "pool1"}) {
      QVERIFY2(layer(cp, id).grad_in_place, id);
      QCOMPARE(layer(cp, id).grad, layer(cp, id).out);
    }
    for (const char* id : {"relu2", "relu4", "pool2", "conv2", "fc"})
      QVERIFY2(!layer(cp, id).grad_in_place, id);
    // A max-pool that keeps its input reads its own output in the backward.
    CompileOptions keep;
    keep.pool_where = false;
    QVERIFY(!layer(compile_or_fail(load("cnn-bn-fashion"), keep), "pool1").grad_in_place);
    // The conv's dX then writes its own input, after dW has read it.
    for (const GraphNode& n : graph_in(cp, GraphId::DEEP_FWD_BWD, 0)->nodes) {
      if (n.op != ComputeOp::CONV_BWD || n.layer != node_index(cp, "conv2")) continue;
      QCOMPARE(n.outputs.back(), n.inputs.front());
      QCOMPARE(n.fork.back().part, BwdPart::DX);
      QCOMPARE(n.fork.back().after, 0);
    }
    // resnet8: a block's output feeds both the next conv and the shortcut: not in place.
    const CompiledProject r8 = compile_or_fail(load("resnet8-fashion"));
    QVERIFY(layer(r8, "s1b1_relu1").grad_in_place);
    QVERIFY(!layer(r8, "s1b1_relu").grad_in_place);
    QVERIFY(!layer(r8, "relu1").grad_in_place);  // stem ReLU: conv and shortcut
    // lenet: the pool outputs are read by the pool backward: never in place.
    const CompiledProject le = compile_or_fail(load("lenet-fashion"));
    QVERIFY(!layer(le, "pool1").grad_in_place);
    QVERIFY(layer(le, "flatten").grad_in_place);
    QVERIFY(layer(le, "relu3").grad_in_place);
    // ReLU's backward takes its mask from its input where its output holds
    // the next layer's dX (in place), else from its output, so that its
    // input can die at the forward.
    int relu_bwd = 0, from_input = 0;
    for (const GraphNode& n : graph_in(le, GraphId::DEEP_FWD_BWD, 0)->nodes)
      if (n.op == ComputeOp::RELU_BWD) {
        ++relu_bwd;
        const LayerTensors& t = le.layers[static_cast<size_t>(n.layer)];
        const int producer = le.analysis.source_of(n.layer, 0).node;
        QCOMPARE(n.inputs.front(),
                 t.grad_in_place ? le.layers[static_cast<size_t>(producer)].out : t.out);
        from_input += t.grad_in_place;
      }
    QCOMPARE(relu_bwd, 4);
    QCOMPARE(from_input, 2);  // relu3 and relu4, before the FC layers
  }

  void inPlaceNeedsAnOutputTheBackwardDoesNotRead() {
    // Tanh's and max-pool's backward read their own output; a fan-out of two
    // means another backward still reads the value. None of these go in place.
    ModelBuilder b;
    b.node("input", LayerType::Input, input(8, 8, 3))
        .node("c1", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("t", LayerType::Tanh)
        .node("c2", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("p", LayerType::MaxPool2d, pool(2, 2))
        .node("c3", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("s", LayerType::SiLU)
        .node("c4", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("c5", LayerType::Conv2d, square_conv(4, 3, 1, 1))
        .node("add", LayerType::Add)
        .node("flat", LayerType::Flatten)
        .node("fc", LayerType::Linear, linear(10))
        .node("loss", LayerType::SoftmaxCrossEntropy)
        .chain({"input", "c1", "t", "c2", "p", "c3", "s", "c4", "add", "flat", "fc", "loss"})
        .edge("s", "c5")
        .edge("c5", "add", 1);
    CompileOptions keep;
    keep.pool_where = false;
    const CompiledProject cp = compile_or_fail(b.build(), keep);
    QVERIFY(!layer(cp, "t").grad_in_place);
    QVERIFY(!layer(cp, "p").grad_in_place);
    // Keeping where its maxima were, it no longer reads its output.
    QVERIFY(layer(compile_or_fail(b.build()), "p").grad_in_place);
    QVERIFY(!layer(cp, "s").grad_in_place);           // read by c4 and c5
    QVERIFY(layer(cp, "c2").grad_in_place == false);  // feeds a pool, not a conv
    QVERIFY(layer(cp, "flat").grad_in_place);
    QVERIFY(!layer(cp, "c1").grad_in_place);  // Tanh's input: Tanh is not a conv
    const CompiledProject off = compile_or_fail(b.build(), rewrites(true, false));
    QVERIFY(!layer(off, "flat").grad_in_place);
  }

  // A ReLU whose input dies at it writes its output over the input, in
  // every variant; where the input lives on (the residual sum's inputs, a
  // feature two layers read) it does not.
  void inPlaceOutputsShareTheirInputsBytes() {
    const CompiledProject le = compile_or_fail(load("lenet-fashion"));
    for (const MemoryPlan& plan : le.plans)
      QCOMPARE(plan.get_dtensor(layer(le, "relu1").out).offset,
               plan.get_dtensor(layer(le, "conv1").out).offset);
    const CompiledProject unpacked = compile_or_fail(load("lenet-fashion"), kUnpacked);
    QVERIFY(unpacked.plans[0].get_dtensor(layer(unpacked, "relu1").out).offset !=
            unpacked.plans[0].get_dtensor(layer(unpacked, "conv1").out).offset);
    // resnet8: the stem ReLU's output feeds a conv and a shortcut; the sum
    // of a block feeds its ReLU only.
    const CompiledProject r8 = compile_or_fail(load("resnet8-fashion"));
    for (const MemoryPlan& plan : r8.plans) {
      QCOMPARE(plan.get_dtensor(layer(r8, "s1b1_relu").out).offset,
               plan.get_dtensor(layer(r8, "s1b1_add").out).offset);
    }
    QVERIFY(compute_op_info(ComputeOp::RELU_FWD).in_place);
    QVERIFY(!compute_op_info(ComputeOp::CONV_FWD).in_place);
  }

  void rewritesShrinkThePlan() {
    for (const char* name : {"lenet-fashion", "cnn-bn-fashion", "resnet8-fashion", "resnet50"}) {
      const CompiledProject cp = compile_or_fail(load(name), kUnpacked);
      const CompiledProject plain =
          compile_or_fail(load(name), rewrites(false, false, false));
      // What the rewrites remove: fused BN outputs and their gradient slots,
      // and the gradient slots of in-place features; nothing else moves.
      uint64_t removed = 0;
      for (size_t i = 0; i < cp.layers.size(); ++i) {
        const LayerTensors& t = cp.layers[i];
        const LayerTensors& p = plain.layers[i];
        if (t.fused_relu >= 0)
          removed += plain.plans[0].get_dtensor(p.out).slot_bytes +
                     plain.plans[0].get_dtensor(p.grad).slot_bytes;
        if (t.grad_in_place) removed += plain.plans[0].get_dtensor(p.grad).slot_bytes;
        // A max-pool keeping where its maxima were adds them (unpacked, its
        // input keeps its bytes).
        if (is_pool_where(cp, static_cast<int>(i)))
          removed -= cp.plans[0].get_dtensor(t.mask).slot_bytes;
      }
      QVERIFY2(removed > 0, name);
      QCOMPARE(cp.bytes_per_device(), plain.bytes_per_device() - removed);
      QCOMPARE(cp.analysis.total_params, plain.analysis.total_params);
    }
  }

  // ---- a big one ------------------------------------------------------------

  void resnet50Compiles() {
    const CompiledProject cp = compile_or_fail(load("resnet50"));
    QCOMPARE(cp.analysis.total_params, int64_t{25557032});
    QCOMPARE(cp.variants.size(), size_t{3});
    QCOMPARE(cp.variants[0].batch, int64_t{256});
    QCOMPARE(cp.variants[1].batch, int64_t{1281167 % 256});
    QCOMPARE(cp.variants[2].batch, int64_t{250});
    QVERIFY(cp.bytes_per_device() > 0);
    for (const MemoryPlan& plan : cp.plans) QVERIFY(plan.total_bytes() <= cp.bytes_per_device());
    // The plan holds every parameter in W (AMP: and half of it in A).
    uint64_t w = 0;
    for (DTensorId id : cp.plans[0].region(Region::W_DEEP_CONV).tensors)
      w += static_cast<uint64_t>(cp.plans[0].get_dtensor(id).shape.elements());
    QVERIFY(w > 20000000);
    QCOMPARE(non_bn_bytes(cp.plans[0], ParamSeries::W),
             2 * series_bytes(cp.plans[0], ParamSeries::A));
    QCOMPARE(graphs_of(cp, GraphId::OPTIMIZER).front()->nodes.size(), size_t{1});
    QCOMPARE(graphs_of(cp, GraphId::CAST_MAIN_FP32_TO_FP16).size(), size_t{1});
  }
};

QTEST_APPLESS_MAIN(TestCompiler)
#include "test_compiler.moc"

// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/compiler.h"

#include <algorithm>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include <renaissance/error.h>
#include <renaissance/layer_spec.h>
#include <renaissance/setting_spec.h>
#include "compile/channel_blocks.h"
#include "compile/layer_lowering.h"
#include "compile/layer_rewrites.h"
#include "compile/step_packing.h"
#include "compile/stream_policy.h"
#include "core/data_shard.h"
#include "model/composite_layers.h"
#include "plan/gradient_buckets.h"

namespace tr {

namespace {

constexpr ParamSeries kAllSeries[] = {ParamSeries::W, ParamSeries::E, ParamSeries::A,
                                      ParamSeries::G, ParamSeries::H, ParamSeries::M,
                                      ParamSeries::V};

Diagnostic variant_problem(const Project& p, size_t index, std::string field, std::string msg) {
  Diagnostic d;
  d.file = p.source_path;
  d.field = "variants[" + std::to_string(index) + "]" + (field.empty() ? "" : "." + field);
  d.message = std::move(msg);
  return d;
}

// A training setting the compiler cannot train with, named where the file says it.
[[noreturn]] void refuse(const Project& p, std::string field, std::string message) {
  Diagnostic d;
  d.file = p.source_path;
  d.field = std::move(field);
  d.message = std::move(message);
  throw ProjectError({d});
}

// Phase 1: the batch and resolution of every variant, per device.
std::vector<ResolvedVariant> resolve_variants(const Project& p) {
  // Every rank computes its own share of the batch (a tensor-parallel
  // group's split layers the group's shares together).
  const int world = p.training.devices.world_size();
  if (world < 1 || p.training.global_batch < 1 || p.training.global_batch % world != 0) {
    Diagnostic d;
    d.file = p.source_path;
    d.field = "training.global_batch";
    d.message = "global_batch " + std::to_string(p.training.global_batch) +
                " must be positive and divisible by the " + std::to_string(world) + " ranks of " +
                p.training.devices.str();
    throw ProjectError({d});
  }
  const int64_t local = p.training.global_batch / world;
  std::vector<Diagnostic> problems;
  std::vector<ResolvedVariant> out;
  size_t trains = 0;
  for (const VariantSpec& spec : p.variants) trains += spec.kind == VariantKind::Train ? 1 : 0;
  if (trains != 1) {
    Diagnostic d;
    d.file = p.source_path;
    d.field = "variants";
    d.message = "expected exactly one variant of kind \"train\", found " + std::to_string(trains);
    problems.push_back(std::move(d));
  }
  for (size_t i = 0; i < p.variants.size(); ++i) {
    const VariantSpec& spec = p.variants[i];
    ResolvedVariant v{spec.name, spec.kind, spec.batch, spec.height, spec.width};
    if (spec.batch < 0 || (spec.kind == VariantKind::Validation && spec.batch == 0)) {
      problems.push_back(variant_problem(p, i, "batch",
                                         "a " + std::string(variant_kind_name(spec.kind)) +
                                             " variant needs a positive batch, not " +
                                             std::to_string(spec.batch)));
      continue;
    }
    switch (spec.kind) {
      case VariantKind::Train:
        if (spec.batch != 0 && spec.batch != local)
          problems.push_back(variant_problem(
              p, i, "batch",
              "a train variant's batch is global_batch / devices = " + std::to_string(local) +
                  " per device, not " + std::to_string(spec.batch) + "; leave \"batch\" out"));
        v.batch = local;
        break;
      case VariantKind::LastBatch:
        if (v.batch == 0) v.batch = (p.dataset.train_size % p.training.global_batch) / world;
        if (v.batch == 0) continue;  // the training set divides evenly: no partial batch
        if (v.batch >= local)
          problems.push_back(variant_problem(
              p, i, "batch",
              "a last batch of " + std::to_string(v.batch) +
                  " per device is not smaller than the train batch " + std::to_string(local)));
        break;
      case VariantKind::Validation:
        // No validation samples: an image folder not counted yet (sizes
        // come from its images, dataset_probe.h). The plan does not depend
        // on them; reading the folder will say what is wrong.
        if (p.dataset.val_size > 0 && v.batch * world > p.dataset.val_size)
          problems.push_back(variant_problem(p, i, "batch",
                                             "validation batch " + std::to_string(v.batch) + " x " +
                                                 std::to_string(world) + " devices exceeds the " +
                                                 std::to_string(p.dataset.val_size) +
                                                 " validation samples"));
        break;
    }
    out.push_back(v);
  }
  if (!problems.empty()) throw ProjectError(std::move(problems));
  return out;
}

struct SeriesUse {
  std::vector<ParamSeries> series;  // which parameter series this project needs
  bool uses(ParamSeries s) const {
    for (ParamSeries x : series)
      if (x == s) return true;
    return false;
  }
};

SeriesUse series_for(const TrainingSpec& t) {
  SeriesUse u;
  const OptimizerSpec& o = t.optimizer;
  const bool sixteen = t.precision != Precision::FP32;
  const OptimizerInfo& info = optimizer_info(o.kind);
  const bool momentum = info.first_moment || o.momentum > 0;
  for (ParamSeries s : kAllSeries) {
    // Both 16-bit precisions compute on a 16-bit weight copy and write
    // 16-bit weight gradients (each op has one storage type: cuDNN's rule).
    if ((s == ParamSeries::A || s == ParamSeries::H) && !sixteen) continue;
    if (s == ParamSeries::E && !t.ema) continue;
    if (s == ParamSeries::M && !momentum) continue;
    if (s == ParamSeries::V && !info.second_moment) continue;
    u.series.push_back(s);
  }
  return u;
}

bool shards_optimizer(const TrainingSpec& t) {
  return t.sharding != Sharding::None && t.data_ranks() > 1;
}

bool shards_gradients(const TrainingSpec& t) {
  return t.sharding == Sharding::OptimizerAndGradients && t.data_ranks() > 1;
}

// Phase 2: the same sequence of semantic allocations for every variant;
// only the shapes differ, so ids line up.
class TensorAllocator {
 public:
  TensorAllocator(CompiledProject& cp, const ModelAnalysis& a, const std::vector<LayerRewrite>& rw,
                  MemoryPlan& plan)
      : p_(cp.project),
        a_(a),
        rw_(rw),
        plan_(plan),
        layers_(cp.layers),
        engine_(cp.engine),
        splits_(cp.splits),
        tensor_ranks_(cp.tensor_ranks),
        use_(series_for(cp.project.training)),
        sharded_(shards_optimizer(cp.project.training)),
        sharded_gradients_(shards_gradients(cp.project.training)) {}

  void run() {
    const DType feat = storage_dtype(p_.training.precision);
    engine_.scalars = plan_.alloc_scalars(static_cast<int64_t>(ScalarSlot::COUNT), "scalars");
    engine_.result = plan_.alloc_result(false);
    engine_.result_accumulated = plan_.alloc_result(true);
    engine_.confusion = plan_.alloc_confusion(p_.dataset.classes);
    const Shape in = a_.nodes[static_cast<size_t>(a_.input_node)].output;
    engine_.input[0] = plan_.alloc_input(InputBuffer::A, in, feat);
    engine_.input[1] = plan_.alloc_input(InputBuffer::B, in, feat);
    engine_.labels[0] = plan_.alloc_label(InputBuffer::A, in.n);
    engine_.labels[1] = plan_.alloc_label(InputBuffer::B, in.n);
    engine_.active_labels = plan_.alloc_active_label(in.n);

    layers_.assign(p_.model.nodes.size(), LayerTensors{});
    for (int v : a_.order) {
      const LayerNode& node = p_.model.nodes[static_cast<size_t>(v)];
      LayerTensors& t = layers_[static_cast<size_t>(v)];
      const NodeAnalysis& na = a_.nodes[static_cast<size_t>(v)];
      const std::string& id = node.id;
      if (const auto own = layer_lowering(node.type).own) {
        OwnedTensors o;
        o.node = &node;
        o.layer = v;
        o.analysis = &na;
        o.first = v == a_.first_layer;
        o.lars = optimizer_info(p_.training.optimizer.kind).layer_norms;
        o.plan = &plan_;
        o.params = [&](std::array<DTensorId, 7>& ids, ParamKind kind, const Shape& shape,
                       const std::string& name) { params(ids, kind, shape, name, v); };
        own(o, t);
      }
      const LayerRewrite& r = rw_[static_cast<size_t>(v)];
      t.fused_relu = r.fused_relu;
      t.fused_into = r.fused_into;
      t.grad_in_place = r.grad_in_place;
      if (r.pool_where) t.mask = plan_.alloc_mask(na.output, id + ".where", v);
      // A BN fused with its ReLU writes the ReLU's output: it has none of its own.
      if (node.type != LayerType::Input && layer_output_ports(node.type) > 0 && r.fused_relu < 0) {
        t.out = plan_.alloc_feature(na.output, feat, id + ".out", v);
        if (r.recompute_out)
          t.recomputed = plan_.alloc_feature(na.output, feat, id + ".recomputed", v);
        // In place: over the copy the consumer's backward reads, when there is one.
        const DTensorId read = t.recomputed != kNoTensor ? t.recomputed : t.out;
        t.grad = r.grad_in_place ? read : plan_.alloc_grad_slot(na.output, feat, id + ".grad", v);
      }
      if (!splits_.empty()) sequence_parallel_buffers(v, t, feat);
    }
    for (LayerTensors& t : layers_)
      if (t.fused_relu >= 0) {
        const LayerTensors& relu = layers_[static_cast<size_t>(t.fused_relu)];
        t.out = relu.out;
        t.grad = relu.grad;
        t.recomputed = relu.recomputed;
      }
    if (sharded_) moment_shards();
  }

 private:
  // Sequence parallel's buffers over the tensor group's batch, each alive
  // from its collective to the kernel that reads it: a column layer's input
  // gathered (in the forward and again in the backward, so that no gathered
  // input is held in between) and its input gradient before the
  // reduce-scatter; a row layer's partial products and its output gradient
  // gathered.
  void sequence_parallel_buffers(int v, LayerTensors& t, DType feat) {
    const NodeAnalysis& na = a_.nodes[static_cast<size_t>(v)];
    const std::string& id = p_.model.nodes[static_cast<size_t>(v)].id;
    const TensorSplit s = splits_[static_cast<size_t>(v)].split;
    if (s == TensorSplit::Column) {
      t.gathered = plan_.alloc_feature(na.inputs[0], feat, id + ".gathered", v);
      t.gathered_again = plan_.alloc_feature(na.inputs[0], feat, id + ".gathered_again", v);
      t.input_grad_part = plan_.alloc_grad_slot(na.inputs[0], feat, id + ".input_grad", v);
    } else if (s == TensorSplit::Row) {
      Shape group = na.output;
      group.n *= tensor_ranks_;
      t.partial = plan_.alloc_feature(group, feat, id + ".partial", v);
      t.grad_gathered = plan_.alloc_grad_slot(group, feat, id + ".grad_gathered", v);
    }
  }

  void params(std::array<DTensorId, 7>& ids, ParamKind kind, const Shape& shape,
              const std::string& name, int owner) {
    for (ParamSeries s : use_.series) {
      // Batch norm's scale and shift stay FP32 in 16-bit training (no A or
      // H copy): its kernels read W and write G, as dbeta sums N*H*W
      // loss-scaled rows that FP16 cannot hold.
      if (is_bn_param(kind) && (s == ParamSeries::A || s == ParamSeries::H)) continue;
      // Sharded moments are the buckets' shards, not a tensor per parameter.
      if (sharded_ && (s == ParamSeries::M || s == ParamSeries::V)) continue;
      ids[static_cast<size_t>(s)] =
          plan_.alloc_param(s, kind, shape, name, owner, storage_dtype(p_.training.precision));
    }
  }

  // Each bucket's moments (and under ZeRO-2 its summed gradients) as this
  // rank's share of them: the share of the largest rank (shard_chunk_bytes),
  // in the M, V (and Q) regions of its first kind.
  void moment_shards() {
    const int world = p_.training.data_ranks();
    for (size_t b = 0; b < std::size(kGradientBuckets); ++b) {
      const GradientBucket& bucket = kGradientBuckets[b];
      const uint64_t bytes = bucket_bytes(plan_, bucket);
      if (bytes == 0) continue;
      const auto share = static_cast<int64_t>(shard_chunk_bytes(bytes, world) / 4);
      const auto whole = static_cast<int64_t>(bytes / 4);
      const std::string name = std::string(bucket.name) + "_bucket";
      if (use_.uses(ParamSeries::M))
        engine_.m_shard[b] = plan_.alloc_shard(param_region(ParamSeries::M, bucket.first), share,
                                               whole, "momentum." + name);
      if (use_.uses(ParamSeries::V))
        engine_.v_shard[b] = plan_.alloc_shard(param_region(ParamSeries::V, bucket.first), share,
                                               whole, "second_moment." + name);
      if (sharded_gradients_)
        engine_.g_shard[b] = plan_.alloc_shard(param_region(ParamSeries::Q, bucket.first), share,
                                               whole, "gradient." + name);
    }
  }

  const Project& p_;
  const ModelAnalysis& a_;
  const std::vector<LayerRewrite>& rw_;
  MemoryPlan& plan_;
  std::vector<LayerTensors>& layers_;
  EngineTensors& engine_;
  const std::vector<LayerSplit>& splits_;
  int tensor_ranks_;
  SeriesUse use_;
  bool sharded_;
  bool sharded_gradients_;
};

// Phase 4: the graphs.
class GraphEmitter {
 public:
  explicit GraphEmitter(CompiledProject& cp)
      : cp_(cp),
        p_(cp.project),
        a_(cp.analysis),
        amp_(p_.training.precision == Precision::AMP),
        sixteen_(p_.training.precision != Precision::FP32),
        world_(cp.data_ranks()) {}

  void run() {
    for (size_t vi = 0; vi < cp_.variants.size(); ++vi) {
      const int v = static_cast<int>(vi);
      for (int buf = 0; buf < 2; ++buf) transfer(v, buf);
      if (cp_.variants[vi].kind == VariantKind::Validation) {
        for (int buf = 0; buf < 2; ++buf) inference(v, buf);
      } else {
        for (int buf = 0; buf < 2; ++buf) first_forward(v, buf);
        deep_forward_backward(v);
        for (int buf = 0; buf < 2; ++buf) first_backward(v, buf);
      }
    }
    shared_graphs();
  }

 private:
  ParamSeries fwd_series() const { return sixteen_ ? ParamSeries::A : ParamSeries::W; }
  ParamSeries grad_series() const { return sixteen_ ? ParamSeries::H : ParamSeries::G; }
  const LayerTensors& L(int node) const { return cp_.layers[static_cast<size_t>(node)]; }
  bool has_bn() const { return !cp_.plans.front().region(Region::B_PREV_MEAN).tensors.empty(); }
  // A ReLU fused into its BN runs no kernel of its own.
  bool runs_kernel(int node) const { return L(node).fused_into < 0; }
  bool region_used(Region r) const { return !cp_.plans.front().region(r).tensors.empty(); }

  ComputationGraph& graph(GraphId id, int variant) {
    ComputationGraph g;
    g.id = id;
    g.variant = variant;
    g.stream = stream_for(id);
    cp_.graphs.push_back(std::move(g));
    return cp_.graphs.back();
  }

  static void add(ComputationGraph& g, GraphNode n) {
    n.stream = stream_for(n);
    g.nodes.push_back(std::move(n));
  }

  static GraphNode compute(ComputeOp op, std::vector<DTensorId> in, std::vector<DTensorId> out,
                           int layer) {
    return compute_node(op, std::move(in), std::move(out), layer);
  }

  static GraphNode range(RangeOp op, std::vector<RegionSpan> in, std::vector<RegionSpan> out,
                         std::vector<DTensorId> tensors_in = {},
                         std::vector<DTensorId> tensors_out = {}) {
    GraphNode n;
    n.kind = NodeKind::RANGE;
    n.range_op = op;
    n.in_spans = std::move(in);
    n.out_spans = std::move(out);
    n.inputs = std::move(tensors_in);
    n.outputs = std::move(tensors_out);
    return n;
  }

  // The tensor feeding input `port` of `node` when reading buffer `buf`; in
  // the backward, a recomputed output's copy.
  DTensorId input_of(int node, int port, int buf, bool backward = false) const {
    const PortRef src = a_.source_of(node, port);
    if (src.node == a_.input_node) return cp_.engine.input[buf];
    const LayerTensors& t = L(src.node);
    return backward && t.recomputed != kNoTensor ? t.recomputed : t.out;
  }
  DTensorId input_grad_of(int node, int port) const {
    const PortRef src = a_.source_of(node, port);
    return src.node == a_.input_node ? kNoTensor : L(src.node).grad;
  }

  void transfer(int v, int buf) {
    ComputationGraph& g = graph(buf ? GraphId::TRANSFER_B : GraphId::TRANSFER_A, v);
    add(g, compute(ComputeOp::H2D_INPUT, {}, {cp_.engine.input[buf], cp_.engine.labels[buf]}, -1));
  }

  // What the lowering table needs of node v, reading buffer `buf`.
  LoweringInputs lowering_inputs(int v, bool training, int buf, bool backward = false) const {
    const LayerNode& node = p_.model.nodes[static_cast<size_t>(v)];
    const int ports = layer_input_ports(node);
    LoweringInputs in;
    in.layer = v;
    in.t = &L(v);
    in.weights = fwd_series();
    in.grads = grad_series();
    in.training = training;
    for (int port = 0; port < ports; ++port) {
      in.xs.push_back(input_of(v, port, buf, backward));
      in.dxs.push_back(input_grad_of(v, port));
    }
    in.x = ports > 0 ? in.xs[0] : kNoTensor;
    in.dx = ports > 0 ? in.dxs[0] : kNoTensor;
    in.engine = &cp_.engine;
    in.buffer = buf;
    in.params = &node.params;
    return in;
  }

  // `again`: the forward run again in the backward, reading its inputs'
  // recomputed copies where they have them.
  GraphNode forward_node(int v, bool training, int buf, bool again = false) const {
    const LayerLowering& l = layer_lowering(p_.model.nodes[static_cast<size_t>(v)].type);
    if (!l.forward) return compute(ComputeOp::IDENTITY, {}, {}, v);
    return l.forward(lowering_inputs(v, training, buf, again));
  }

  // The forward of recomputed layer `v` again, into its copy, after those of
  // its inputs that are recomputed too (once each).
  // A fused ReLU's output is its batch norm's: that forward runs again.
  void recompute(ComputationGraph& g, int v, std::set<int>& done) {
    if (v == a_.input_node || L(v).recomputed == kNoTensor || !done.insert(v).second) return;
    const int runs = L(v).fused_into >= 0 ? L(v).fused_into : v;
    const int ports = layer_input_ports(p_.model.nodes[static_cast<size_t>(runs)]);
    for (int port = 0; port < ports; ++port) recompute(g, a_.source_of(runs, port).node, done);
    GraphNode again = forward_node(runs, true, 0, true);
    std::replace(again.outputs.begin(), again.outputs.end(), L(v).out, L(v).recomputed);
    add(g, std::move(again));
  }

  // Tensor parallel: a collective over the tensor group from `in` to `out`
  // (the same tensor for a sum in place), caused by `layer`.
  static GraphNode tensor_collective(RangeOp op, DTensorId in, DTensorId out, int layer) {
    GraphNode n = range(op, {}, {}, {in}, {out});
    n.group = CommGroup::Tensor;
    n.layer = layer;
    return n;
  }
  TensorSplit split(int v) const {
    return cp_.splits.empty() ? TensorSplit::Whole : cp_.splits[static_cast<size_t>(v)].split;
  }

  // A layer's forward. Sequence parallel: a column-parallel one reads its
  // input gathered over the tensor group; a row-parallel one's partial
  // products (its bias added by the first rank alone) are summed over the
  // group, each rank keeping its own samples.
  void add_forward(ComputationGraph& g, int v, bool training, int buf) {
    GraphNode n = forward_node(v, training, buf);
    const LayerTensors& t = L(v);
    switch (split(v)) {
      case TensorSplit::Column: {
        const DTensorId x = input_of(v, 0, buf);
        add(g, tensor_collective(RangeOp::ALLGATHER_BATCH, x, t.gathered, v));
        std::replace(n.inputs.begin(), n.inputs.end(), x, t.gathered);
        add(g, std::move(n));
        break;
      }
      case TensorSplit::Row:
        n.bias_on_first_tensor_rank = true;
        std::replace(n.outputs.begin(), n.outputs.end(), t.out, t.partial);
        add(g, std::move(n));
        add(g, tensor_collective(RangeOp::REDUCE_SCATTER_BATCH, t.partial, t.out, v));
        break;
      default:
        add(g, std::move(n));
    }
  }

  // A layer's backward. Sequence parallel: a row-parallel one reads its
  // output gradient gathered over the tensor group; a column-parallel one
  // its input gathered again, and its input gradient, a partial sum over
  // the group's batch, is reduce-scattered; a whole layer's parameter
  // gradients are of its rank's samples, summed over the group.
  void add_backward(ComputationGraph& g, int v, std::set<DTensorId>& written) {
    GraphNode n = backward_node(v, written);
    const LayerTensors& t = L(v);
    switch (split(v)) {
      case TensorSplit::Row:
        add(g, tensor_collective(RangeOp::ALLGATHER_BATCH, t.grad, t.grad_gathered, v));
        std::replace(n.inputs.begin(), n.inputs.end(), t.grad, t.grad_gathered);
        add(g, std::move(n));
        break;
      case TensorSplit::Column: {
        const DTensorId x = input_of(v, 0, 0, true), dx = input_grad_of(v, 0);
        add(g, tensor_collective(RangeOp::ALLGATHER_BATCH, x, t.gathered_again, v));
        std::replace(n.inputs.begin(), n.inputs.end(), x, t.gathered_again);
        std::replace(n.outputs.begin(), n.outputs.end(), dx, t.input_grad_part);
        add(g, std::move(n));
        add(g, tensor_collective(RangeOp::REDUCE_SCATTER_BATCH, t.input_grad_part, dx, v));
        break;
      }
      case TensorSplit::Whole: {
        std::vector<DTensorId> grads = parameter_gradients(n);
        add(g, std::move(n));
        for (DTensorId id : grads) add(g, tensor_collective(RangeOp::ALLREDUCE_SUM, id, id, v));
        break;
      }
      case TensorSplit::Local:
        add(g, std::move(n));
    }
  }

  // The parameter gradients `n` writes, where a whole layer's need the
  // tensor group's sum (none without tensor parallel).
  std::vector<DTensorId> parameter_gradients(const GraphNode& n) const {
    std::vector<DTensorId> out;
    if (cp_.tensor_ranks == 1) return out;
    for (DTensorId id : n.outputs) {
      const Region r = cp_.plans.front().get_dtensor(id).region;
      const char s = region_series(r);
      if (region_param_kind(r) && (s == 'G' || s == 'H')) out.push_back(id);
    }
    return out;
  }

  void first_forward(int v, int buf) {
    ComputationGraph& g = graph(buf ? GraphId::FIRST_LAYER_FWD_B : GraphId::FIRST_LAYER_FWD_A, v);
    add(g,
        compute(ComputeOp::COPY_LABELS, {cp_.engine.labels[buf]}, {cp_.engine.active_labels}, -1));
    add_forward(g, a_.first_layer, true, buf);
  }

  // Backward of one node; `written` tracks which gradient slots already hold
  // a value this step, so a second consumer of a tensor accumulates.
  GraphNode backward_node(int v, std::set<DTensorId>& written) const {
    const LayerLowering& l = layer_lowering(p_.model.nodes[static_cast<size_t>(v)].type);
    GraphNode n = l.backward ? l.backward(lowering_inputs(v, true, 0, true)) : GraphNode{};
    // Only feature gradients can be written twice (fan-out); weight
    // gradients belong to one layer.
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const DTensorId o = n.outputs[i];
      const Region r = cp_.plans.front().get_dtensor(o).region;
      if (r != Region::F_GRAD_SLOT_FP32 && r != Region::F_GRAD_SLOT_FP16 &&
          r != Region::F_GRAD_SLOT_BF16)
        continue;
      if (!written.insert(o).second) n.accumulate_mask |= static_cast<uint8_t>(1u << i);
    }
    return n;
  }

  void deep_forward_backward(int v) {
    ComputationGraph& g = graph(GraphId::DEEP_FWD_BWD, v);
    for (int node : a_.order)
      if (node != a_.input_node && node != a_.first_layer && runs_kernel(node))
        add_forward(g, node, true, 0);
    // ZeRO-2: the gradients live in the pool from here, and start at zero
    // (what ZERO_GRAD does for gradients with bytes of their own).
    if (cp_.sharded_gradients) add(g, range(RangeOp::CLEAR, {}, cleared_gradients()));
    std::set<DTensorId> written;
    // The loss writes the logits' gradient.
    written.insert(input_grad_of(a_.loss_node, 0));
    std::set<int> recomputed;
    for (auto it = a_.order.rbegin(); it != a_.order.rend(); ++it) {
      const int node = *it;
      if (node == a_.input_node || node == a_.first_layer || node == a_.loss_node ||
          !runs_kernel(node))
        continue;
      // Inputs recomputed for this backward (once, before the first reader).
      const int ports = layer_input_ports(p_.model.nodes[static_cast<size_t>(node)]);
      for (int port = 0; port < ports; ++port)
        recompute(g, a_.source_of(node, port).node, recomputed);
      add_backward(g, node, written);
    }
  }

  void first_backward(int v, int buf) {
    ComputationGraph& g = graph(buf ? GraphId::FIRST_LAYER_BWD_B : GraphId::FIRST_LAYER_BWD_A, v);
    const int f = a_.first_layer;
    const LayerTensors& t = L(f);
    const ParamSeries gs = grad_series();
    std::vector<DTensorId> out{t.weight_in(gs)};
    if (t.bias_in(gs) != kNoTensor) out.push_back(t.bias_in(gs));
    const bool conv = p_.model.nodes[static_cast<size_t>(f)].type == LayerType::Conv2d;
    GraphNode n = compute(conv ? ComputeOp::CONV_BWD_FIRST : ComputeOp::LINEAR_BWD_FIRST,
                          {cp_.engine.input[buf], t.grad}, out, f);
    std::vector<DTensorId> grads = parameter_gradients(n);
    add(g, std::move(n));
    for (DTensorId id : grads) add(g, tensor_collective(RangeOp::ALLREDUCE_SUM, id, id, f));
  }

  void inference(int v, int buf) {
    ComputationGraph& g = graph(buf ? GraphId::INF_MAIN_B : GraphId::INF_MAIN_A, v);
    for (int node : a_.order)
      if (node != a_.input_node && runs_kernel(node)) add_forward(g, node, false, buf);
    add(g, range(RangeOp::ACCUMULATE, {{Region::R_RESULT, Region::R_RESULT}},
                 {{Region::R_RESULT_ACCUMULATED, Region::R_RESULT_ACCUMULATED}}));
  }

  void shared(GraphId id, std::vector<GraphNode> nodes) {
    ComputationGraph& g = graph(id, -1);
    g.shape_invariant = true;
    for (GraphNode& n : nodes) add(g, std::move(n));
  }

  static RegionSpan series_span(ParamSeries s) {
    return {param_region(s, ParamKind::BN_BIAS), param_region(s, ParamKind::DEEP_CONV)};
  }
  static RegionSpan kinds_span(ParamSeries s, ParamKind first, ParamKind last) {
    return {param_region(s, first), param_region(s, last)};
  }

  // The gradients a step starts from zero: 16-bit training's 16-bit ones,
  // and batch norm's FP32 ones, which its kernels write straight into G.
  // Under ZeRO-2 a span per bucket: each is its own block of the pool.
  std::vector<RegionSpan> cleared_gradients() const {
    std::vector<RegionSpan> cleared;
    if (cp_.sharded_gradients)
      for (const GradientBucket& b : kGradientBuckets)
        cleared.push_back(kinds_span(grad_series(), b.first, b.last));
    else
      cleared.push_back(series_span(grad_series()));
    if (sixteen_)
      cleared.push_back(kinds_span(ParamSeries::G, ParamKind::BN_BIAS, ParamKind::BN_WEIGHT));
    return cleared;
  }

  // A graph of the gradients' casts and communication: shared, but under
  // ZeRO-2 one per training variant, as each variant's pool places the
  // gradients where its lifetimes allow.
  void gradient_graph(GraphId id, const std::vector<GraphNode>& nodes) {
    if (!cp_.sharded_gradients) {
      shared(id, nodes);
      return;
    }
    for (size_t v = 0; v < cp_.variants.size(); ++v) {
      if (cp_.variants[v].kind == VariantKind::Validation) continue;
      ComputationGraph& g = graph(id, static_cast<int>(v));
      for (const GraphNode& n : nodes) add(g, n);
    }
  }

  void shared_graphs() {
    const DTensorId scalars = cp_.engine.scalars;
    const SeriesUse use = series_for(p_.training);
    const bool zero2 = cp_.sharded_gradients;
    // What the update reads: the gradients, or under ZeRO-2 this rank's
    // share of their sums.
    const RegionSpan grads = series_span(zero2 ? ParamSeries::Q : ParamSeries::G);
    const RegionSpan deep_g{Region::G_DEEP_CONV, Region::G_DEEP_CONV};
    const RegionSpan first_g{Region::G_BN_BIAS, Region::G_FIRST_CONV};
    const RegionSpan result{Region::R_RESULT, Region::R_RESULT};

    if (!zero2) shared(GraphId::ZERO_GRAD, {range(RangeOp::CLEAR, {}, cleared_gradients())});
    if (sixteen_) {
      const RangeOp widen = amp_ ? RangeOp::CAST_FP16_TO_FP32 : RangeOp::CAST_BF16_TO_FP32;
      gradient_graph(
          amp_ ? GraphId::CAST_DEEP_GRAD_FP16_TO_FP32 : GraphId::CAST_DEEP_GRAD_BF16_TO_FP32,
          {range(widen, {{Region::H_DEEP_CONV, Region::H_DEEP_CONV}}, {deep_g})});
      // Batch norm's gradients are FP32 already: the cast starts after them.
      gradient_graph(
          amp_ ? GraphId::CAST_FIRST_GRAD_FP16_TO_FP32 : GraphId::CAST_FIRST_GRAD_BF16_TO_FP32,
          {range(widen, {{Region::H_FC_BIAS, Region::H_FIRST_CONV}},
                 {{Region::G_FC_BIAS, Region::G_FIRST_CONV}})});
    }
    if (world_ > 1 && zero2) {
      // Each bucket's mean, of which each rank keeps its share; the batch
      // result, which the full-bucket all-reduce carried, on its own.
      gradient_graph(
          GraphId::DEEP_COMM,
          {range(RangeOp::REDUCE_SCATTER, {deep_g},
                 {kinds_span(ParamSeries::Q, ParamKind::DEEP_CONV, ParamKind::DEEP_CONV)}),
           range(RangeOp::ALLREDUCE_MEAN, {result}, {result})});
      gradient_graph(
          GraphId::FIRST_COMM,
          {range(RangeOp::REDUCE_SCATTER, {first_g},
                 {kinds_span(ParamSeries::Q, ParamKind::BN_BIAS, ParamKind::FIRST_CONV)})});
    } else if (cp_.tensor_ranks > 1) {
      // Each rank's result is of its own samples: its mean over every rank,
      // beside the data-parallel mean of the gradients.
      std::vector<GraphNode> deep;
      if (world_ > 1) deep.push_back(range(RangeOp::ALLREDUCE_MEAN, {deep_g}, {deep_g}));
      deep.push_back(world(RangeOp::ALLREDUCE_MEAN, result));
      shared(GraphId::DEEP_COMM, std::move(deep));
      if (world_ > 1)
        shared(GraphId::FIRST_COMM, {range(RangeOp::ALLREDUCE_MEAN, {first_g}, {first_g})});
    } else if (world_ > 1) {
      const RegionSpan deep_bucket{Region::G_DEEP_CONV, Region::R_RESULT};
      shared(GraphId::DEEP_COMM, {range(RangeOp::ALLREDUCE_MEAN, {deep_bucket}, {deep_bucket})});
      shared(GraphId::FIRST_COMM, {range(RangeOp::ALLREDUCE_MEAN, {first_g}, {first_g})});
    }
    shared(GraphId::METRIC_ACCUMULATE,
           {range(RangeOp::ACCUMULATE, {{Region::R_RESULT, Region::R_RESULT}},
                  {{Region::R_RESULT_ACCUMULATED, Region::R_RESULT_ACCUMULATED}})});
    {
      std::vector<GraphNode> nodes;
      if (zero2) {
        // Each rank checks its share of the sums; the ranks then agree.
        nodes.push_back(range(RangeOp::NAN_CHECK, {grads, result}, {}, {}, {scalars}));
        const RegionSpan s{Region::S_SCALARS, Region::S_SCALARS};
        nodes.push_back(range(RangeOp::ALLREDUCE_MAX, {s}, {s}));
      } else {
        nodes.push_back(
            range(RangeOp::NAN_CHECK, {{Region::G_BN_BIAS, Region::R_RESULT}}, {}, {}, {scalars}));
      }
      if (cp_.tensor_ranks > 1) {
        // Tensor parallel: each rank checks its parts of the split layers'
        // gradients; the ranks of a group then agree, so all skip together.
        const RegionSpan s{Region::S_SCALARS, Region::S_SCALARS};
        GraphNode agree = range(RangeOp::ALLREDUCE_MAX, {s}, {s});
        agree.group = CommGroup::Tensor;
        nodes.push_back(std::move(agree));
      }
      if (amp_) {
        nodes.push_back(range(RangeOp::SCALE, {grads}, {grads}, {scalars}));
        nodes.push_back(compute(ComputeOp::LOSS_SCALE_UPDATE, {scalars}, {scalars}, -1));
      }
      nodes.push_back(compute(ComputeOp::COUNT_UPDATE, {scalars}, {scalars}, -1));
      shared(GraphId::NAN_CHECK_AND_GRAD_SCALING, std::move(nodes));
    }
    if (has_bn()) {
      const RegionSpan next{Region::B_NEXT_MEAN, Region::B_NEXT_VAR};
      // SyncBatchNorm computes the same statistics on every rank already.
      if (cp_.world_size > 1 && !p_.training.sync_batch_norm)
        shared(GraphId::STATS_COMM, {world(RangeOp::ALLREDUCE_MEAN, next)});
      shared(GraphId::UPDATE_STATS,
             {range(RangeOp::COPY, {next}, {{Region::B_PREV_MEAN, Region::B_PREV_VAR}})});
    }
    optimizer(use, scalars);
    if (p_.training.ema)
      shared(GraphId::EMA_UPDATE, {range(RangeOp::EMA_UPDATE, {series_span(ParamSeries::W)},
                                         {series_span(ParamSeries::E)}, {scalars})});
    if (sixteen_)  // batch norm's parameters have no 16-bit copy
      shared(amp_ ? GraphId::CAST_MAIN_FP32_TO_FP16 : GraphId::CAST_MAIN_FP32_TO_BF16,
             {range(amp_ ? RangeOp::CAST_FP32_TO_FP16 : RangeOp::CAST_FP32_TO_BF16,
                    {kinds_span(ParamSeries::W, ParamKind::FC_BIAS, ParamKind::DEEP_CONV)},
                    {kinds_span(ParamSeries::A, ParamKind::FC_BIAS, ParamKind::DEEP_CONV)})});
    shared(GraphId::RESET_METRICS,
           {range(RangeOp::CLEAR, {}, {{Region::R_RESULT_ACCUMULATED, Region::R_CONFUSION}})});
    if (has_bn())
      shared(GraphId::UPDATE_BN_INF_PARAMS,
             {range(RangeOp::BN_EQ_PARAMS,
                    {{Region::B_PREV_MEAN, Region::B_PREV_VAR},
                     kinds_span(ParamSeries::W, ParamKind::BN_BIAS, ParamKind::BN_WEIGHT)},
                    {{Region::B_EQ_SCALE, Region::B_EQ_BIAS}})});
    if (cp_.world_size > 1)
      shared(GraphId::VAL_RESULT_COMM,
             {world(RangeOp::ALLREDUCE_SUM, {Region::R_RESULT_ACCUMULATED, Region::R_CONFUSION})});
  }

  // A collective in place over every rank (each rank's own samples').
  static GraphNode world(RangeOp op, RegionSpan span) {
    GraphNode n = range(op, {span}, {span});
    n.group = CommGroup::World;
    return n;
  }

  // One RANGE update per region group: the number of launches does not grow
  // with depth. Under ZeRO-1 one per gradient bucket, each rank updating its
  // share of it, and the gather that hands every rank the others' shares.
  void optimizer(const SeriesUse& use, DTensorId scalars) {
    const bool sharded = cp_.sharded_optimizer;
    const ParamSeries grads = cp_.sharded_gradients ? ParamSeries::Q : ParamSeries::G;
    auto spans_of = [&](ParamKind first, ParamKind last, bool with_v) {
      std::vector<RegionSpan> in{kinds_span(ParamSeries::W, first, last),
                                 kinds_span(grads, first, last)};
      std::vector<RegionSpan> out{kinds_span(ParamSeries::W, first, last)};
      if (use.uses(ParamSeries::M)) {
        in.push_back(kinds_span(ParamSeries::M, first, last));
        out.push_back(kinds_span(ParamSeries::M, first, last));
      }
      if (with_v) {
        in.push_back(kinds_span(ParamSeries::V, first, last));
        out.push_back(kinds_span(ParamSeries::V, first, last));
      }
      return std::make_pair(in, out);
    };
    // The update of the kinds first..last: one node, or sharded one per
    // gradient bucket they reach, each rank's share of it.
    auto updates = [&](RangeOp op, ParamKind first, ParamKind last, bool with_v) {
      std::vector<GraphNode> nodes;
      auto add = [&](ParamKind lo, ParamKind hi) {
        auto [in, out] = spans_of(lo, hi, with_v);
        nodes.push_back(range(op, in, out, {scalars}));
        nodes.back().data_sharded = sharded;
      };
      if (!sharded) {
        add(first, last);
        return nodes;
      }
      for (const GradientBucket& b : kGradientBuckets) {
        const ParamKind lo = std::max(first, b.first), hi = std::min(last, b.last);
        if (lo <= hi && kinds_used(lo, hi)) add(lo, hi);
      }
      return nodes;
    };
    switch (p_.training.optimizer.kind) {
      case OptimizerKind::SGD:
        shared(GraphId::OPTIMIZER,
               updates(RangeOp::SGD_UPDATE, ParamKind::BN_BIAS, ParamKind::DEEP_CONV, false));
        break;
      case OptimizerKind::Adam: {
        std::vector<GraphNode> nodes;
        nodes.push_back(compute(ComputeOp::ADAM_BIAS_CORRECTION, {scalars}, {scalars}, -1));
        for (GraphNode& n :
             updates(RangeOp::ADAM_UPDATE, ParamKind::BN_BIAS, ParamKind::DEEP_CONV, true))
          nodes.push_back(std::move(n));
        shared(GraphId::OPTIMIZER, std::move(nodes));
        break;
      }
      case OptimizerKind::LARS: {
        // Batch-norm parameters take plain momentum SGD; the trust ratio is per layer.
        if (has_bn())
          shared(GraphId::OPTIMIZER,
                 updates(RangeOp::SGD_UPDATE, ParamKind::BN_BIAS, ParamKind::BN_WEIGHT, false));
        const LarsGroup groups[] = {
            {GraphId::LARS_FC_OPT, ParamKind::FC_BIAS, ParamKind::FC_WEIGHT, Region::N_FC},
            {GraphId::LARS_FIRST_CONV_OPT, ParamKind::FIRST_CONV, ParamKind::FIRST_CONV,
             Region::N_FIRST_CONV},
            {GraphId::LARS_DEEP_CONV_OPT, ParamKind::DEEP_CONV, ParamKind::DEEP_CONV,
             Region::N_DEEP_CONV}};
        if (cp_.sharded_gradients) lars_norm_sum(groups, spans_of);
        for (const LarsGroup& group : groups) lars(group, spans_of, scalars);
        break;
      }
    }
    if (!sharded) return;
    std::vector<GraphNode> gather;
    for (const GradientBucket& b : kGradientBuckets)
      if (kinds_used(b.first, b.last)) {
        const RegionSpan w = kinds_span(ParamSeries::W, b.first, b.last);
        gather.push_back(range(RangeOp::ALLGATHER, {w}, {w}));
      }
    shared(GraphId::WEIGHT_GATHER, std::move(gather));
  }

  bool kinds_used(ParamKind first, ParamKind last) const {
    for (int k = static_cast<int>(first); k <= static_cast<int>(last); ++k)
      if (region_used(param_region(ParamSeries::W, static_cast<ParamKind>(k)))) return true;
    return false;
  }

  struct LarsGroup {
    GraphId id;
    ParamKind first, last;
    Region norms;
  };

  template <class SpansOf>
  void lars(const LarsGroup& group, SpansOf& spans_of, DTensorId scalars) {
    if (!region_used(group.norms)) return;
    auto [in, out] = spans_of(group.first, group.last, false);
    const RegionSpan norms{group.norms, group.norms};
    std::vector<GraphNode> nodes;
    // Every rank takes the norms of whole layers (ZeRO-1 keeps the whole
    // gradients; ZeRO-2's LARS_NORM_SUM took them before) and updates its share.
    if (!cp_.sharded_gradients)
      nodes.push_back(range(RangeOp::LARS_NORMS, {in[0], in[1]}, {norms}));
    in.push_back(norms);
    nodes.push_back(range(RangeOp::LARS_UPDATE, in, out, {scalars}));
    nodes.back().data_sharded = cp_.sharded_optimizer;
    shared(group.id, std::move(nodes));
  }

  // ZeRO-2: each rank holds its share of the summed gradients only, so each
  // takes the squares of its share of every layer, the ranks add them up,
  // and the square roots are the whole layers' norms (to rounding: the
  // squares add in another order than one rank's sum would). One graph on
  // UPDATE, as the three LARS groups' graphs run side by side and a
  // collective must come in the same order on every rank.
  template <class SpansOf>
  void lars_norm_sum(const LarsGroup (&groups)[3], SpansOf& spans_of) {
    const RegionSpan all{Region::N_FC, Region::N_DEEP_CONV};
    std::vector<GraphNode> nodes;
    nodes.push_back(range(RangeOp::CLEAR, {}, {all}));
    for (const LarsGroup& group : groups) {
      if (!region_used(group.norms)) continue;
      auto [in, out] = spans_of(group.first, group.last, false);
      nodes.push_back(range(RangeOp::LARS_NORMS, {in[0], in[1]}, {{group.norms, group.norms}}));
      nodes.back().data_sharded = true;
    }
    if (nodes.size() == 1) return;
    nodes.push_back(range(RangeOp::ALLREDUCE_SUM, {all}, {all}));
    nodes.push_back(range(RangeOp::SQRT, {all}, {all}));
    shared(GraphId::LARS_NORM_SUM, std::move(nodes));
  }

  CompiledProject& cp_;
  const Project& p_;
  const ModelAnalysis& a_;
  bool amp_;      // FP16 storage and loss scaling (else BF16 when sixteen_)
  bool sixteen_;  // a 16-bit weight copy (A), gradients (H) and features
  int world_;
};

std::string describe(const ResolvedVariant& v) {
  std::string s = "in variant '" + v.name + "' (batch " + std::to_string(v.batch);
  if (v.height > 0) s += ", " + std::to_string(v.height) + "x" + std::to_string(v.width);
  return s + "): ";
}

}  // namespace

uint64_t CompiledProject::bytes_per_device() const noexcept {
  uint64_t most = 0;
  for (const MemoryPlan& p : plans) most = std::max(most, p.total_bytes());
  return most;
}

int CompiledProject::variant_index(VariantKind kind) const noexcept {
  for (size_t i = 0; i < variants.size(); ++i)
    if (variants[i].kind == kind) return static_cast<int>(i);
  return -1;
}

const ComputationGraph* CompiledProject::find_graph(GraphId id, int variant) const noexcept {
  for (const ComputationGraph& g : graphs)
    if (g.id == id && (g.variant == variant || g.variant == -1)) return &g;
  return nullptr;
}

namespace {

// What a memory budget may recompute (the training variant's bytes of each
// output), cheapest per byte first and the largest first among equals, and
// what this plan recomputes.
void list_recomputation(CompiledProject& cp, const std::vector<LayerRewrite>& rewrites) {
  const int train = std::max(0, cp.variant_index(VariantKind::Train));
  const MemoryPlan& plan = cp.plans[static_cast<size_t>(train)];
  for (int n : recompute_candidates(cp.project, cp.analysis, rewrites)) {
    const int relu = rewrites[static_cast<size_t>(n)].fused_relu;
    const int holder = relu >= 0 ? relu : n;
    RecomputeChoice c;
    c.layer = cp.project.model.nodes[static_cast<size_t>(n)].id;
    c.bytes = plan.get_dtensor(cp.layers[static_cast<size_t>(holder)].out).slot_bytes;
    c.extra_flops = cp.analysis.nodes[static_cast<size_t>(n)].flops +
                    (relu >= 0 ? cp.analysis.nodes[static_cast<size_t>(relu)].flops : 0);
    cp.recompute_candidates.push_back(c);
  }
  std::stable_sort(
      cp.recompute_candidates.begin(), cp.recompute_candidates.end(),
      [](const RecomputeChoice& a, const RecomputeChoice& b) {
        // a.flops / a.bytes < b.flops / b.bytes, without dividing
        const auto l = static_cast<double>(a.extra_flops) * static_cast<double>(b.bytes);
        const auto r = static_cast<double>(b.extra_flops) * static_cast<double>(a.bytes);
        return l != r ? l < r : a.bytes > b.bytes;
      });
  for (const RecomputeChoice& c : cp.recompute_candidates)
    if (std::find(cp.options.recompute_layers.begin(), cp.options.recompute_layers.end(),
                  c.layer) != cp.options.recompute_layers.end())
      cp.recomputed.push_back(c);
}

// Tensor parallel: which of each split layer's tensors are a tensor rank's
// part of a whole one, and along which dimension. Weights are [out, 1, 1,
// in] (a TokenLinear's too): a column layer's split by outputs (its bias
// with them), a row layer's by inputs (its bias whole, added once). The
// features between a column and a row layer are split by channels (for the
// group's batch), every other feature by samples (sequence parallel); the
// gathered buffers hold the group's all (R), the partial products are P.
void mark_tensor_placements(CompiledProject& cp) {
  const Placement rows{PlacementKind::Shard, 0}, channels{PlacementKind::Shard, 3};
  const Placement samples = rows, partial{PlacementKind::Partial, 0};
  for (MemoryPlan& plan : cp.plans) {
    if (cp.splits.empty()) break;
    const EngineTensors& e = cp.engine;
    for (DTensorId id : {e.input[0], e.input[1], e.labels[0], e.labels[1], e.active_labels})
      plan.set_tensor_placement(id, samples, 1);
    for (size_t v = 0; v < cp.splits.size(); ++v) {
      const LayerSplit& s = cp.splits[v];
      const LayerTensors& t = cp.layers[v];
      // A split layer's parts come in its blocks (an attention's q, k, v).
      auto mark = [&](DTensorId id, Placement p, int blocks) {
        if (id != kNoTensor) plan.set_tensor_placement(id, p, blocks);
      };
      if (s.split == TensorSplit::Column || s.split == TensorSplit::Row)
        for (DTensorId id : t.weight)
          mark(id, s.split == TensorSplit::Column ? rows : channels, s.blocks);
      if (s.split == TensorSplit::Column)
        for (DTensorId id : t.bias) mark(id, channels, s.blocks);
      const bool split_features = s.split == TensorSplit::Column || s.split == TensorSplit::Local;
      for (DTensorId id : {t.out, t.grad, t.recomputed, t.saved, t.mask})
        mark(id, split_features ? channels : samples, split_features ? s.blocks : 1);
      for (DTensorId id : {t.input_grad_part, t.partial}) mark(id, partial, 1);
    }
  }
}

// The graphs, each node with the settings its kernel runs with.
void emit_graphs(CompiledProject& cp) {
  GraphEmitter(cp).run();
  resolve_node_params(cp.graphs, cp.project.model);
  cp.constants = training_constants(cp.project.training);
}

}  // namespace

// The project compiled with its variants as they are.
static CompiledProject compile_variants(const Project& project, const CompileOptions& options) {
  CompiledProject cp;
  cp.design = project;
  cp.project = project;
  cp.options = options;
  cp.world_size = project.training.devices.world_size();
  cp.sharded_optimizer = shards_optimizer(project.training);
  cp.sharded_gradients = shards_gradients(project.training);
  const TrainingSpec& t = project.training;
  const std::string mesh = "mesh tensor=" + std::to_string(t.tensor_ranks);
  if (t.data_ranks() == 0)
    refuse(project, "training.mesh.tensor",
           mesh + " does not divide the " + std::to_string(cp.world_size) + " ranks of " +
               t.devices.str() + "; choose devices it divides or a smaller tensor dimension");
  if (t.tensor_ranks > 1 && optimizer_info(t.optimizer.kind).layer_norms)
    refuse(project, "training.optimizer",
           "optimizer \"" + std::string(optimizer_name(t.optimizer.kind)) + "\" with " + mesh +
               ": its trust ratio needs each whole layer's norms, and a tensor rank holds only "
               "its part of the split layers; train with sgd or adam, or mesh tensor=1");
  if (t.tensor_ranks > 1 && t.sharding != Sharding::None)
    refuse(project, "training.sharding",
           "sharding \"" + std::string(sharding_name(t.sharding)) + "\" with " + mesh +
               ": the optimizer state of tensor-parallel layers is split over the tensor ranks "
               "already, and sharding it over the data ranks as well is not supported; set "
               "sharding \"none\" or mesh tensor=1");
  if (t.sharding != Sharding::None && cp.world_size == 1)
    refuse(project, "training.sharding",
           "sharding \"" + std::string(sharding_name(t.sharding)) +
               "\" splits the optimizer state over the ranks, and training.devices " +
               t.devices.str() +
               " is one rank; train on more (--devices cpu:2) or set sharding \"none\"");
  cp.variants = resolve_variants(project);

  std::vector<ModelAnalysis> analyses;
  std::vector<Diagnostic> problems;
  for (const ResolvedVariant& v : cp.variants) {
    analyses.push_back(analyze_model(project, v.batch, v.height, v.width));
    for (Diagnostic d : analyses.back().problems) {
      if (v.kind != VariantKind::Train) d.message = describe(v) + d.message;
      problems.push_back(std::move(d));
    }
    if (v.kind == VariantKind::Train && !problems.empty()) break;  // the model itself is wrong
  }
  if (!problems.empty()) throw ProjectError(std::move(problems));
  const size_t train = static_cast<size_t>(cp.variant_index(VariantKind::Train));
  // What is compiled: the design with each composite layer's parts in its place.
  if (has_composite_layers(project.model)) {
    cp.project = expand_composite_layers(project, analyses[train]);
    for (size_t i = 0; i < cp.variants.size(); ++i) {
      const ResolvedVariant& v = cp.variants[i];
      analyses[i] = analyze_model(cp.project, v.batch, v.height, v.width);
      if (!analyses[i].ok())
        throw std::logic_error("the parts of a composite layer do not fit: " +
                               analyses[i].problems.front().str());
    }
  }
  // Tensor parallel: the model one tensor rank computes.
  cp.tensor_ranks = static_cast<int>(project.training.tensor_ranks);
  if (cp.tensor_ranks > 1) {
    cp.splits = plan_tensor_parallel(cp.project, analyses[train], cp.tensor_ranks);
    cp.project = tensor_rank_model(cp.project, cp.splits, cp.tensor_ranks);
    for (size_t i = 0; i < cp.variants.size(); ++i) {
      const ResolvedVariant& v = cp.variants[i];
      analyses[i] = analyze_model(cp.project, v.batch, v.height, v.width);
      if (!analyses[i].ok())
        throw std::logic_error("a tensor rank's share of the model does not fit: " +
                               analyses[i].problems.front().str());
      group_batch_shapes(analyses[i], cp.splits, cp.tensor_ranks);
    }
  }
  cp.analysis = analyses[train];

  std::vector<LayerRewrite> rewrites = plan_layer_rewrites(cp.project, cp.analysis, options);
  // Column- and row-parallel layers compute through their tensor group's
  // collectives (a gathered input, a reduce-scatter): never again in the backward.
  for (size_t v = 0; v < cp.splits.size(); ++v)
    if (cp.splits[v].split == TensorSplit::Row || cp.splits[v].split == TensorSplit::Column)
      rewrites[v].recompute_out = false;
  for (size_t i = 0; i < cp.variants.size(); ++i) {
    cp.plans.emplace_back(cp.variants[i].name);
    cp.plans.back().set_channel_padding(cp.project.training.devices.kind == DeviceKind::CUDA);
    TensorAllocator(cp, analyses[i], rewrites, cp.plans.back()).run();
  }
  mark_tensor_placements(cp);
  list_recomputation(cp, rewrites);
  const int block =
      cp.project.training.devices.kind == DeviceKind::CUDA ? 0 : options.channel_block;
  if (!options.pack_memory) {
    finalize_variants(cp.plans);
    emit_graphs(cp);
    choose_channel_blocks(cp, block);
    return cp;
  }
  unify_variants(cp.plans, false);
  emit_graphs(cp);
  choose_channel_blocks(cp, block);
  // ZeRO-2: the same tensors and graphs, the full gradients packed into the
  // pool or in bytes of their own; unless told, the smaller plan is kept
  // (both train the same, bit for bit).
  using Place = CompileOptions::GradientPlace;
  if (!cp.sharded_gradients || options.gradient_place == Place::Own) {
    pack_step_local(cp);
    return cp;
  }
  CompiledProject pooled = cp;
  for (MemoryPlan& plan : pooled.plans) plan.set_gradients_in_pool(true);
  pack_step_local(pooled);
  if (options.gradient_place == Place::Pool) return pooled;
  pack_step_local(cp);
  return cp.bytes_per_device() < pooled.bytes_per_device() ? cp : pooled;
}

// The validation variant's micro-batch fitted (CompileOptions::validation_micro_batch).
CompiledProject compile_fitted(const Project& project, const CompileOptions& options) {
  int val = -1;
  for (size_t i = 0; i < project.variants.size(); ++i)
    if (project.variants[i].kind == VariantKind::Validation && project.variants[i].batch > 0)
      val = static_cast<int>(i);
  const int64_t asked = options.validation_micro_batch;
  if (val < 0 || asked == CompileOptions::kAsWritten) return compile_variants(project, options);
  const int64_t written = project.variants[static_cast<size_t>(val)].batch;
  auto with = [&](int64_t micro) {
    Project p = project;
    p.variants[static_cast<size_t>(val)].batch = micro;
    CompiledProject cp = compile_variants(p, options);
    cp.design.variants[static_cast<size_t>(val)].batch = written;  // what runs and checkpoints keep
    if (micro != written) cp.validation_batch_written = written;
    return cp;
  };
  const int64_t world = project.training.devices.world_size();
  const int64_t samples = project.dataset.val_size;
  auto covers = [&](int64_t m) { return samples <= 0 || samples % (m * world) == 0; };
  if (asked > 0) {
    const int64_t m = std::min(asked, written);
    if (!covers(m)) {
      int64_t below = m - 1;
      while (below > 0 && !covers(below)) --below;
      refuse(project, "variants[" + std::to_string(val) + "].batch",
             "validation micro-batches of " + std::to_string(m) + " x " + std::to_string(world) +
                 " rank" + (world == 1 ? "" : "s") + " do not cover the " +
                 std::to_string(samples) + " validation samples; " +
                 (below > 0 ? "--validation-micro-batch " + std::to_string(below) + " does"
                            : std::string("no micro-batch on these ranks does")));
    }
    return with(m);
  }
  CompiledProject whole = with(written);
  // No larger than training's batch: a forward keeps less than training.
  if (written <= whole.variants[static_cast<size_t>(whole.variant_index(VariantKind::Train))].batch)
    return whole;
  // What training needs without validation: the bytes validation may use.
  Project train_only = project;
  train_only.variants.erase(train_only.variants.begin() + val);
  const uint64_t budget = compile_variants(train_only, options).bytes_per_device();
  if (whole.bytes_per_device() <= budget) return whole;
  // Micro-batches whose global batches cover the validation set, largest
  // first; a validation forward's bytes grow with its batch, so the
  // largest that fits is found by bisection.
  std::vector<int64_t> sizes;
  for (int64_t m = written - 1; m >= 1; --m)
    if (covers(m)) sizes.push_back(m);
  if (sizes.empty()) return whole;
  size_t lo = 0, hi = sizes.size() - 1;  // sizes[hi], the smallest, is the fallback
  std::optional<CompiledProject> best;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    CompiledProject cp = with(sizes[mid]);
    if (cp.bytes_per_device() <= budget) {
      hi = mid;
      best = std::move(cp);
    } else {
      lo = mid + 1;
    }
  }
  // `best`, when set, is the one compiled at sizes[hi]: the answer.
  return best ? std::move(*best) : with(sizes[lo]);
}

// Under a memory budget, the fewest recomputations that make the plan fit,
// taken in the candidates' order (cheapest per byte first): the plan's bytes
// mostly fall as more are taken, so the count is found by bisection. They
// need not (recomputed copies live together in a segment's backward), so
// where no count fits, the smallest plan compiled on the way is kept.
CompiledProject compile_project(const Project& project, const CompileOptions& asked) {
  CompileOptions options = asked;
  if (options.memory_budget == 0)
    options.memory_budget = static_cast<uint64_t>(project.training.memory_budget_mib) << 20;
  CompiledProject plain = compile_fitted(project, options);
  // --recompute off keeps every output, budget or not (the plan says it is over).
  if (options.memory_budget == 0 || !options.recompute ||
      plain.bytes_per_device() <= options.memory_budget)
    return plain;
  const std::vector<RecomputeChoice> candidates = plain.recompute_candidates;
  auto with = [&](size_t count) {
    CompileOptions o = options;
    for (size_t i = 0; i < count; ++i)
      if (std::find(o.recompute_layers.begin(), o.recompute_layers.end(), candidates[i].layer) ==
          o.recompute_layers.end())
        o.recompute_layers.push_back(candidates[i].layer);
    return compile_fitted(project, o);
  };
  size_t lo = 1, hi = candidates.size();
  if (hi == 0) return plain;
  std::optional<CompiledProject> best;
  CompiledProject smallest = std::move(plain);
  auto keep_smallest = [&](CompiledProject&& cp) {
    if (cp.bytes_per_device() < smallest.bytes_per_device()) smallest = std::move(cp);
  };
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    CompiledProject cp = with(mid);
    if (cp.bytes_per_device() <= options.memory_budget) {
      hi = mid;
      best = std::move(cp);
    } else {
      keep_smallest(std::move(cp));
      lo = mid + 1;
    }
  }
  // `best`, when set, was compiled at `hi`, the answer.
  if (best) return std::move(*best);
  CompiledProject all = with(hi);
  if (all.bytes_per_device() <= options.memory_budget) return all;
  keep_smallest(std::move(all));
  return smallest;
}

}  // namespace tr

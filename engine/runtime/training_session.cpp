// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/training_session.h"

#include "runtime/moment_shards.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <stdexcept>

#include <renaissance/error.h>
#include "data/host_tensor.h"
#include "plan/tensor_shards.h"
#include "runtime/pinned_host.h"
#include "runtime/weight_init.h"

namespace tr {

namespace {

// One step's host side: the scalars the host writes (H2D) and the result and
// scalars it reads back (D2H). Two of them, for the step being read and the
// step in flight, in page-locked memory, so neither copy blocks the host.
struct StepIo {
  std::array<float, kHostWrittenScalars> scalars_in;
  std::array<float, 4> result;  // loss, top-1 and top-5 sums, samples
  std::array<float, static_cast<size_t>(ScalarSlot::COUNT)> scalars_out;
};

}  // namespace

// Events are created once, before any capture (CUDA forbids creating them
// while capturing); the schedule reuses them every step.
struct TrainingSession::RankState {
  std::unique_ptr<GraphAtlas> atlas;
  std::unique_ptr<EventPool> capture_events;
  EventId lr_ready = -1, zero_done = -1, deep_done = -1, first_done = -1, update_ready = -1,
          infer_done = -1;
  std::array<EventId, 2> transfer_done{-1, -1};
  std::array<EventId, 3> lars_done{-1, -1, -1};
  // Step s's host side is slot s % 2; step_done[slot] follows its last work.
  std::array<EventId, 2> step_done{-1, -1};
  std::array<bool, 2> unfinished{};
  Tensor io_pages;  // two StepIo, whole pages
  std::optional<PinnedHost> io_pinned;
  StepIo& io(int slot) { return reinterpret_cast<StepIo*>(io_pages.data<std::byte>())[slot]; }
  // Validation on the EMA weights: W is parked on the host meanwhile.
  std::vector<float> parked_w, ema_w;
  bool ema_swapped = false;
};

TrainingSession::TrainingSession(const CompiledProject& cp, Backend& backend)
    : cp_(cp), backend_(backend), world_(cp.world_size), local_(backend.world_size()) {
  // The plan splits the global batch over every rank of every node.
  if (backend.global_world() != world_)
    throw std::invalid_argument("the backend has " + std::to_string(backend.global_world()) +
                                " ranks but the project trains on " + std::to_string(world_));
  size_t events = 0;
  for (const ComputationGraph& g : cp_.graphs) events = std::max(events, capture_events_needed(g));
  for (int r = 0; r < local_; ++r) {
    auto rs = std::make_unique<RankState>();
    rs->atlas = std::make_unique<GraphAtlas>(static_cast<int>(cp_.variants.size()));
    rs->capture_events = std::make_unique<EventPool>(backend_, r, events);
    for (EventId* e :
         {&rs->lr_ready, &rs->zero_done, &rs->deep_done, &rs->first_done, &rs->update_ready,
          &rs->infer_done, &rs->transfer_done[0], &rs->transfer_done[1], &rs->lars_done[0],
          &rs->lars_done[1], &rs->lars_done[2], &rs->step_done[0], &rs->step_done[1]})
      *e = backend_.create_event(r);
    static_assert(sizeof(StepIo) % sizeof(float) == 0);
    rs->io_pages = Tensor::whole_pages(
        {1, 1, 1, static_cast<int64_t>(2 * sizeof(StepIo) / sizeof(float))}, DType::FP32);
    rs->io_pinned.emplace(backend_, rs->io_pages.data<std::byte>(), rs->io_pages.allocated_bytes());
    ranks_.push_back(std::move(rs));
  }
}

TrainingSession::~TrainingSession() {
  // Launches in flight point into the atlas; let them finish first.
  for (int r = 0; r < local_; ++r) {
    try {
      backend_.synchronize(r);
    } catch (...) {
      // an error of a step that is being abandoned: nothing left to report it to
    }
  }
}

void TrainingSession::initialize(uint64_t seed) {
  backend_.allocate_arenas(cp_.bytes_per_device());
  std::vector<float> scalars(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  const bool amp = cp_.project.training.precision == Precision::AMP;
  scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)] = amp ? 65536.0f : 1.0f;
  scalars[static_cast<size_t>(ScalarSlot::INV_LOSS_SCALE)] = amp ? 1.0f / 65536.0f : 1.0f;
  load_state(initial_weights(cp_, seed), scalars);
}

void TrainingSession::load_state(const std::vector<InitialTensor>& tensors,
                                 const std::vector<float>& scalars) {
  const MemoryPlan& plan = cp_.plans.front();
  if (!scalars.empty() && scalars.size() != static_cast<size_t>(ScalarSlot::COUNT))
    throw std::invalid_argument("TrainingSession::load_state: " + std::to_string(scalars.size()) +
                                " scalars, expected " +
                                std::to_string(static_cast<int>(ScalarSlot::COUNT)));
  // Tensor parallel: every local rank loads its own part of each split
  // tensor and all of the rest (the split tensors lie among the others, so
  // no broadcast from rank 0 can replicate them). Else rank 0 loads and
  // the others take its copy.
  const int T = cp_.tensor_ranks;
  for (const InitialTensor& t : tensors) {
    const DTensor& d = plan.get_dtensor(t.id);
    const int64_t whole = whole_shape(d, T).elements();
    if (d.dtype != DType::FP32 || static_cast<int64_t>(t.values.size()) != whole)
      throw std::invalid_argument(
          "TrainingSession::load_state: " + std::to_string(t.values.size()) + " values for " +
          d.name + " in " + std::string(region_name(d.region)) + ", which holds " +
          std::to_string(whole));
  }
  const int loading = T > 1 ? local_ : 1;
  std::deque<std::vector<float>> parts;  // the host copies, alive until the copies finish
  for (int r = 0; r < loading; ++r) {
    for (const InitialTensor& t : tensors) {
      const DTensor& d = plan.get_dtensor(t.id);
      const std::vector<float>* values = &t.values;
      if (is_tensor_shard(d, T)) {
        parts.push_back(tensor_part(d, T, backend_.global_rank(r) % T, t.values));
        values = &parts.back();
      }
      Launch l;
      l.kind = LaunchKind::COPY_H2D;
      l.offset = d.offset;
      l.host = const_cast<float*>(values->data());
      l.bytes = values->size() * sizeof(float);
      l.tag.label = "load " + d.name;
      backend_.enqueue(r, StreamKind::TRANS, std::move(l));
    }
    if (!scalars.empty()) {
      Launch l;
      l.kind = LaunchKind::COPY_H2D;
      l.offset = plan.get_dtensor(cp_.engine.scalars).offset;
      l.host = const_cast<float*>(scalars.data());
      l.bytes = scalars.size() * sizeof(float);
      l.tag.label = "load scalars";
      backend_.enqueue(r, StreamKind::TRANS, std::move(l));
    }
  }
  for (int r = 0; r < loading; ++r) backend_.synchronize(r, StreamKind::TRANS);
  if (T == 1) replicate_from_rank0();
}

void TrainingSession::replicate_from_rank0() {
  if (world_ == 1) return;
  const MemoryPlan& plan = cp_.plans.front();
  const DTensor& scalars = plan.get_dtensor(cp_.engine.scalars);
  // B, W and E are adjacent, so are M and V: three broadcasts in one group.
  // ZeRO-1's moments are each rank's own (load_shards writes them).
  const ByteRange moments = plan.region_range(Region::M_BN_BIAS, Region::V_DEEP_CONV);
  const ByteRange ranges[3] = {plan.region_range(Region::B_PREV_MEAN, Region::E_DEEP_CONV),
                               cp_.sharded_optimizer ? ByteRange{moments.offset, 0} : moments,
                               {scalars.offset, scalars.slot_bytes}};
  // Every node loads the same state into its local rank 0 (a seed gives the
  // same weights on any machine); global rank 0's copy is the one broadcast.
  for (int r = 0; r < local_; ++r) {
    backend_.group_start(r);
    for (const ByteRange& range : ranges)
      if (range.bytes > 0) backend_.broadcast(r, StreamKind::UPDATE, range, 0);
    backend_.group_end(r);
  }
  for (int r = 0; r < local_; ++r) backend_.synchronize(r);
}

std::vector<DTensorId> persistent_tensors(const CompiledProject& cp) {
  const MemoryPlan& plan = cp.plans.front();
  std::vector<DTensorId> out;
  auto add_span = [&](Region first, Region last) {
    for (int r = region_index(first); r <= region_index(last); ++r)
      for (DTensorId id : plan.region(static_cast<Region>(r)).tensors) out.push_back(id);
  };
  add_span(Region::B_PREV_MEAN, Region::B_PREV_VAR);
  add_span(Region::W_BN_BIAS, Region::E_DEEP_CONV);
  add_span(Region::M_BN_BIAS, Region::V_DEEP_CONV);
  // ZeRO-1's moment shards differ between ranks (runtime/moment_shards.h).
  const std::vector<DTensorId> shards = shard_tensors(cp);
  std::erase_if(out, [&](DTensorId id) {
    return std::find(shards.begin(), shards.end(), id) != shards.end();
  });
  return out;
}

void TrainingSession::warm_up(const ResolvedGraph& rg) {
  // The compute graphs only: they write features, gradients, batch
  // statistics, masks and per-batch results, which every step and
  // validation writes again before it reads them (and, under AMP, the FP16
  // weights are still zero). Transfers, the data-parallel collectives and
  // updates of the weights, moments or running statistics never run here;
  // tensor parallel's sums of features inside these graphs do, every rank
  // of a group warming its graphs up on its own thread in the same order.
  const GraphId id = rg.graph->id;
  if (id != GraphId::FIRST_LAYER_FWD_A && id != GraphId::DEEP_FWD_BWD &&
      id != GraphId::FIRST_LAYER_BWD_A && id != GraphId::INF_MAIN_A)
    return;
  // One stream in capture order, a topological order of the graph.
  for (size_t i = 0; i < rg.nodes.size(); ++i)
    for (Launch& l : node_launches(cp_, rg, i, {}))
      backend_.enqueue(rg.rank, rg.graph->stream, std::move(l));
  backend_.synchronize(rg.rank);
}

void TrainingSession::capture(int rank, const RankStaging& staging) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  for (const ComputationGraph& g : cp_.graphs) {
    auto slot = std::make_unique<AtlasSlot>();
    const int variant = std::max(g.variant, 0);
    // The kernels see the global rank (dropout streams differ across nodes);
    // the capture drives the backend's local rank.
    slot->resolved =
        resolve_graph(cp_, g, variant, backend_.arena(rank), backend_.global_rank(rank), world_);
    slot->resolved.rank = rank;
    slot->stream = g.stream;
    TransferHost host;
    if (g.id == GraphId::TRANSFER_A || g.id == GraphId::TRANSFER_B) {
      // A variant nobody feeds (validation when it is switched off) has no transfers.
      if (static_cast<size_t>(variant) >= staging.per_variant.size()) continue;
      host = staging.per_variant[static_cast<size_t>(variant)][g.id == GraphId::TRANSFER_B];
      if (!host.data) continue;
    }
    if (backend_.warm_up_before_capture()) warm_up(slot->resolved);
    slot->handle = capture_graph(backend_, cp_, slot->resolved, *rs.capture_events, host);
    rs.atlas->put(g.id, g.variant, std::move(slot));
  }
  // AMP and BF16: the 16-bit weights start as a copy of the loaded master weights.
  cast_weights(rank, 0);
  backend_.synchronize(rank, StreamKind::UPDATE);
}

void TrainingSession::launch(int rank, GraphId id, int variant, StreamKind stream) {
  const AtlasSlot* slot = ranks_[static_cast<size_t>(rank)]->atlas->find(id, variant);
  if (!slot)
    throw std::logic_error(std::string("no captured graph ") + std::string(graph_id_name(id)));
  backend_.launch_graph(rank, stream, slot->handle);
}

void TrainingSession::launch_if(int rank, GraphId id, int variant, StreamKind stream) {
  if (const AtlasSlot* slot = ranks_[static_cast<size_t>(rank)]->atlas->find(id, variant))
    backend_.launch_graph(rank, stream, slot->handle);
}

void TrainingSession::cast_weights(int rank, int variant) {
  launch_if(rank, GraphId::CAST_MAIN_FP32_TO_FP16, variant, StreamKind::UPDATE);
  launch_if(rank, GraphId::CAST_MAIN_FP32_TO_BF16, variant, StreamKind::UPDATE);
}

void TrainingSession::transfer(int rank, int variant, int buffer) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  launch(rank, buffer ? GraphId::TRANSFER_B : GraphId::TRANSFER_A, variant, StreamKind::TRANS);
  backend_.record(rank, StreamKind::TRANS, rs.transfer_done[static_cast<size_t>(buffer)]);
}

void TrainingSession::enqueue_step(int rank, int variant, int buffer, const Batch* next,
                                   int next_variant, double lr, int64_t step) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  constexpr StreamKind TRANS = StreamKind::TRANS, COMP_1 = StreamKind::COMP_1,
                       UPDATE = StreamKind::UPDATE;
  const int slot = static_cast<int>(step & 1);
  if (rs.unfinished[static_cast<size_t>(slot)])
    throw std::logic_error("step " + std::to_string(step) + " enqueued while step " +
                           std::to_string(step - 2) + " is unfinished");
  // 1. learning rate, step number and a cleared overflow flag, H2D on TRANS.
  //    First the step before finishes on the device: its update still reads
  //    the scalars, and its first layer's backward the input buffer that
  //    this step's transfer of the next batch overwrites.
  backend_.wait(rank, TRANS, rs.step_done[static_cast<size_t>(1 - slot)]);
  StepIo& io = rs.io(slot);
  io.scalars_in = {static_cast<float>(lr), static_cast<float>(step), 0.0f};
  Launch scalars;
  scalars.kind = LaunchKind::COPY_H2D;
  scalars.offset = cp_.plans.front().get_dtensor(cp_.engine.scalars).offset;
  scalars.host = io.scalars_in.data();
  scalars.bytes = sizeof(io.scalars_in);
  scalars.tag.label = "scalars H2D";
  backend_.enqueue(rank, TRANS, std::move(scalars));
  backend_.record(rank, TRANS, rs.lr_ready);

  // 2. zero-grad on UPDATE and the first layer's forward on COMP_1, together
  //    (ZeRO-2's gradients are cleared where the pool gives them bytes, in
  //    DEEP_FWD_BWD)
  backend_.wait(rank, UPDATE, rs.lr_ready);
  launch_if(rank, GraphId::ZERO_GRAD, variant, UPDATE);
  backend_.record(rank, UPDATE, rs.zero_done);
  backend_.wait(rank, COMP_1, rs.lr_ready);
  backend_.wait(rank, COMP_1, rs.transfer_done[static_cast<size_t>(buffer)]);
  launch(rank, buffer ? GraphId::FIRST_LAYER_FWD_B : GraphId::FIRST_LAYER_FWD_A, variant, COMP_1);

  // 3. the next batch's transfer overlaps this step's compute
  if (next) transfer(rank, next_variant, next->buffer);

  // 4. everything after the first layer, forward and backward
  backend_.wait(rank, COMP_1, rs.zero_done);
  launch(rank, GraphId::DEEP_FWD_BWD, variant, COMP_1);
  backend_.record(rank, COMP_1, rs.deep_done);

  // 5. first-layer backward on COMP_1; the deep bucket's cast and all-reduce on
  //    UPDATE run under it
  launch(rank, buffer ? GraphId::FIRST_LAYER_BWD_B : GraphId::FIRST_LAYER_BWD_A, variant, COMP_1);
  backend_.record(rank, COMP_1, rs.first_done);
  backend_.wait(rank, UPDATE, rs.deep_done);
  launch_if(rank, GraphId::CAST_DEEP_GRAD_FP16_TO_FP32, variant, UPDATE);
  launch_if(rank, GraphId::CAST_DEEP_GRAD_BF16_TO_FP32, variant, UPDATE);
  launch_if(rank, GraphId::DEEP_COMM, variant, UPDATE);

  // 6. the first bucket, metrics, NaN check and scaling, BN statistics
  backend_.wait(rank, UPDATE, rs.first_done);
  launch_if(rank, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32, variant, UPDATE);
  launch_if(rank, GraphId::CAST_FIRST_GRAD_BF16_TO_FP32, variant, UPDATE);
  launch_if(rank, GraphId::FIRST_COMM, variant, UPDATE);
  launch(rank, GraphId::METRIC_ACCUMULATE, variant, UPDATE);
  launch(rank, GraphId::NAN_CHECK_AND_GRAD_SCALING, variant, UPDATE);
  launch_if(rank, GraphId::STATS_COMM, variant, UPDATE);
  launch_if(rank, GraphId::UPDATE_STATS, variant, UPDATE);

  // 7. the optimizer; LARS spreads its three groups over the compute streams
  //    (under ZeRO-2 after the ranks have summed its norms on UPDATE)
  launch_if(rank, GraphId::OPTIMIZER, variant, UPDATE);
  launch_if(rank, GraphId::LARS_NORM_SUM, variant, UPDATE);
  const GraphId lars[3] = {GraphId::LARS_FC_OPT, GraphId::LARS_FIRST_CONV_OPT,
                           GraphId::LARS_DEEP_CONV_OPT};
  const StreamKind lars_stream[3] = {COMP_1, StreamKind::COMP_2, StreamKind::COMP_3};
  bool any_lars = false;
  for (int i = 0; i < 3; ++i) any_lars |= rs.atlas->find(lars[i], variant) != nullptr;
  if (any_lars) {
    backend_.record(rank, UPDATE, rs.update_ready);
    for (int i = 0; i < 3; ++i) {
      if (!rs.atlas->find(lars[i], variant)) continue;
      backend_.wait(rank, lars_stream[i], rs.update_ready);
      launch(rank, lars[i], variant, lars_stream[i]);
      backend_.record(rank, lars_stream[i], rs.lars_done[static_cast<size_t>(i)]);
      backend_.wait(rank, UPDATE, rs.lars_done[static_cast<size_t>(i)]);
    }
  }

  // ZeRO-1: each rank's updated share of the weights to every rank
  launch_if(rank, GraphId::WEIGHT_GATHER, variant, UPDATE);

  // 8. EMA, the 16-bit weight copy, and the result on its way to the host
  launch_if(rank, GraphId::EMA_UPDATE, variant, UPDATE);
  cast_weights(rank, variant);
  enqueue_result(rank, cp_.engine.result, slot);
  rs.unfinished[static_cast<size_t>(slot)] = true;
}

StepMetrics TrainingSession::finish_step(int rank, int64_t step) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  const int slot = static_cast<int>(step & 1);
  if (!rs.unfinished[static_cast<size_t>(slot)])
    throw std::logic_error("step " + std::to_string(step) + " finished but never enqueued");
  rs.unfinished[static_cast<size_t>(slot)] = false;
  StepMetrics m = take_result(rank, slot);
  // DEEP_COMM took the mean of every rank's sums: the ratios hold, the count
  // is one rank's.
  m.samples *= cp_.world_size;
  return m;
}

void TrainingSession::enqueue_result(int rank, DTensorId id, int slot) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  StepIo& io = rs.io(slot);
  const MemoryPlan& plan = cp_.plans.front();
  const DTensor& scalars = plan.get_dtensor(cp_.engine.scalars);
  if (scalars.shape.elements() != static_cast<int64_t>(io.scalars_out.size()))
    throw std::logic_error("the scalars tensor holds " + std::to_string(scalars.shape.elements()) +
                           " values, not " + std::to_string(io.scalars_out.size()));
  Launch result;
  result.kind = LaunchKind::COPY_D2H;
  result.offset = plan.get_dtensor(id).offset;
  result.host = io.result.data();
  result.bytes = sizeof(io.result);
  result.tag.label = "result D2H";
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(result));
  Launch flags;
  flags.kind = LaunchKind::COPY_D2H;
  flags.offset = scalars.offset;
  flags.host = io.scalars_out.data();
  flags.bytes = sizeof(io.scalars_out);
  flags.tag.label = "scalars D2H";
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(flags));
  backend_.record(rank, StreamKind::UPDATE, rs.step_done[static_cast<size_t>(slot)]);
}

StepMetrics TrainingSession::take_result(int rank, int slot) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  backend_.synchronize_event(rank, rs.step_done[static_cast<size_t>(slot)]);
  const StepIo& io = rs.io(slot);
  const auto& scalars = io.scalars_out;
  StepMetrics m;
  const auto& r = io.result;
  // Sums over the samples (a mean all-reduce keeps the ratios).
  m.samples = r[3];
  if (r[3] > 0) {
    m.loss = r[0] / r[3];
    m.top1 = r[1] / r[3];
    m.top5 = r[2] / r[3];
  }
  m.overflow = scalars[static_cast<size_t>(ScalarSlot::OVERFLOW)] != 0.0f || !std::isfinite(m.loss);
  if (cp_.project.training.precision == Precision::AMP)
    m.loss_scale = scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)];
  return m;
}

void TrainingSession::copy_weights(int rank, ByteRange from_device, float* to_host,
                                   const char* label) {
  Launch l;
  l.kind = LaunchKind::COPY_D2H;
  l.offset = from_device.offset;
  l.host = to_host;
  l.bytes = from_device.bytes;
  l.tag.label = label;
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(l));
}

void TrainingSession::restore_weights(int rank, ByteRange to_device, float* from_host,
                                      const char* label) {
  Launch l;
  l.kind = LaunchKind::COPY_H2D;
  l.offset = to_device.offset;
  l.host = from_host;
  l.bytes = to_device.bytes;
  l.tag.label = label;
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(l));
  cast_weights(rank, 0);
}

void TrainingSession::begin_validation(int rank, bool ema_weights) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  if (rs.unfinished[0] || rs.unfinished[1])
    throw std::logic_error("validation begun with a training step unfinished");
  if (ema_weights) {
    if (!cp_.project.training.ema)
      throw UsageError("validation on the EMA weights needs training.ema.enabled in project '" +
                       cp_.project.name + "'");
    // W and E share one layout, so the whole series swaps as one span. The
    // host holds W meanwhile: no device region is spare for it.
    const MemoryPlan& plan = cp_.plans.front();
    const ByteRange w = plan.region_range(Region::W_BN_BIAS, Region::W_DEEP_CONV);
    const ByteRange e = plan.region_range(Region::E_BN_BIAS, Region::E_DEEP_CONV);
    if (w.bytes != e.bytes) throw std::logic_error("the W and E series differ in size");
    rs.parked_w.resize(w.bytes / sizeof(float));
    rs.ema_w.resize(e.bytes / sizeof(float));
    copy_weights(rank, w, rs.parked_w.data(), "park W for EMA validation");
    copy_weights(rank, e, rs.ema_w.data(), "read E for EMA validation");
    restore_weights(rank, w, rs.ema_w.data(), "E into W for validation");
    rs.ema_swapped = true;
  }
  launch_if(rank, GraphId::UPDATE_BN_INF_PARAMS, 0, StreamKind::UPDATE);
  launch(rank, GraphId::RESET_METRICS, 0, StreamKind::UPDATE);
  backend_.synchronize(rank, StreamKind::UPDATE);
}

void TrainingSession::validate_batch(int rank, int variant, int buffer) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  transfer(rank, variant, buffer);
  backend_.wait(rank, StreamKind::COMP_1, rs.transfer_done[static_cast<size_t>(buffer)]);
  launch(rank, buffer ? GraphId::INF_MAIN_B : GraphId::INF_MAIN_A, variant, StreamKind::COMP_1);
  backend_.synchronize(rank);
}

StepMetrics TrainingSession::end_validation(int rank) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  launch_if(rank, GraphId::VAL_RESULT_COMM, 0, StreamKind::UPDATE);
  enqueue_result(rank, cp_.engine.result_accumulated, 0);
  const StepMetrics m = take_result(rank, 0);
  if (rs.ema_swapped) {
    rs.ema_swapped = false;
    restore_weights(rank, cp_.plans.front().region_range(Region::W_BN_BIAS, Region::W_DEEP_CONV),
                    rs.parked_w.data(), "W back after EMA validation");
    backend_.synchronize(rank, StreamKind::UPDATE);
  }
  return m;
}

std::vector<int64_t> TrainingSession::read_confusion(int rank) {
  const std::vector<float> counts = read_tensor(rank, cp_.engine.confusion);
  return std::vector<int64_t>(counts.begin(), counts.end());
}

std::vector<float> TrainingSession::read_scalars(int rank) {
  return read_tensor(rank, cp_.engine.scalars);
}

std::map<DTensorId, std::vector<float>> TrainingSession::read_shards(int rank) {
  std::map<DTensorId, std::vector<float>> out;
  for (DTensorId id : shard_tensors(cp_)) out[id] = read_tensor(rank, id);
  const MemoryPlan& plan = cp_.plans.front();
  for (DTensorId id : persistent_tensors(cp_))
    if (is_tensor_shard(plan.get_dtensor(id), cp_.tensor_ranks)) out[id] = read_tensor(rank, id);
  return out;
}

void TrainingSession::load_shards(const RankShards& shards) {
  const MemoryPlan& plan = cp_.plans.front();
  if (shards.size() != static_cast<size_t>(local_))
    throw std::logic_error("TrainingSession::load_shards: the shards of " +
                           std::to_string(shards.size()) + " ranks for " + std::to_string(local_));
  for (int r = 0; r < local_; ++r) {
    for (const auto& [id, values] : shards[static_cast<size_t>(r)]) {
      const DTensor& d = plan.get_dtensor(id);
      if (static_cast<int64_t>(values.size()) != d.shape.elements())
        throw std::logic_error("TrainingSession::load_shards: " + std::to_string(values.size()) +
                               " values for " + d.name);
      Launch l;
      l.kind = LaunchKind::COPY_H2D;
      l.offset = d.offset;
      l.host = const_cast<float*>(values.data());
      l.bytes = values.size() * sizeof(float);
      l.tag.label = "load " + d.name;
      backend_.enqueue(r, StreamKind::TRANS, std::move(l));
    }
    backend_.synchronize(r, StreamKind::TRANS);
  }
}

std::vector<float> TrainingSession::read_tensor(int rank, DTensorId id, int variant) {
  const DTensor& t = cp_.plans.at(static_cast<size_t>(variant)).get_dtensor(id);
  std::vector<float> out(static_cast<size_t>(t.shape.elements()));
  Launch d2h;
  d2h.kind = LaunchKind::COPY_D2H;
  d2h.offset = t.offset;
  d2h.host = out.data();
  d2h.bytes = out.size() * sizeof(float);
  d2h.tag.label = "read " + t.name;
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(d2h));
  backend_.synchronize(rank);
  if (!t.is_blocked()) return out;
  // Channel blocks (a CPU plan's feature maps): back to NHWC for the host.
  std::vector<float> nhwc(out.size());
  const Shape& s = t.shape;
  for (int64_t n = 0, i = 0; n < s.n; ++n)
    for (int64_t h = 0; h < s.h; ++h)
      for (int64_t w = 0; w < s.w; ++w)
        for (int64_t c = 0; c < s.c; ++c, ++i)
          nhwc[static_cast<size_t>(i)] = out[static_cast<size_t>(t.element_index(n, h, w, c))];
  return nhwc;
}

}  // namespace tr

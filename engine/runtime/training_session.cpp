// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/training_session.h"

#include <cmath>
#include <stdexcept>

#include "runtime/weight_init.h"

namespace tr {

// Events are created once, before any capture (CUDA forbids creating them
// while capturing); the schedule reuses them every step.
struct TrainingSession::RankState {
  std::unique_ptr<GraphAtlas> atlas;
  std::unique_ptr<EventPool> capture_events;
  EventId lr_ready = -1, zero_done = -1, deep_done = -1, first_done = -1, update_ready = -1,
          infer_done = -1;
  std::array<EventId, 2> transfer_done{-1, -1};
  std::array<EventId, 3> lars_done{-1, -1, -1};
  std::array<float, kHostWrittenScalars> host_scalars{};
  std::array<float, 4> host_result{};
};

TrainingSession::TrainingSession(const CompiledProject& cp, Backend& backend)
    : cp_(cp), backend_(backend), world_(cp.world_size) {
  if (backend.world_size() != world_)
    throw std::invalid_argument("the backend has " + std::to_string(backend.world_size()) +
                                " ranks but the project trains on " + std::to_string(world_));
  size_t events = 0;
  for (const ComputationGraph& g : cp_.graphs) events = std::max(events, capture_events_needed(g));
  for (int r = 0; r < world_; ++r) {
    auto rs = std::make_unique<RankState>();
    rs->atlas = std::make_unique<GraphAtlas>(static_cast<int>(cp_.variants.size()));
    rs->capture_events = std::make_unique<EventPool>(backend_, r, events);
    for (EventId* e :
         {&rs->lr_ready, &rs->zero_done, &rs->deep_done, &rs->first_done, &rs->update_ready,
          &rs->infer_done, &rs->transfer_done[0], &rs->transfer_done[1], &rs->lars_done[0],
          &rs->lars_done[1], &rs->lars_done[2]})
      *e = backend_.create_event(r);
    ranks_.push_back(std::move(rs));
  }
}

TrainingSession::~TrainingSession() {
  // Launches in flight point into the atlas; let them finish first.
  for (int r = 0; r < world_; ++r) {
    try {
      backend_.synchronize(r);
    } catch (...) {
      // an error of a step that is being abandoned: nothing left to report it to
    }
  }
}

void TrainingSession::initialize(uint64_t seed) {
  backend_.allocate_arenas(cp_.bytes_per_device());
  const std::vector<InitialTensor> weights = initial_weights(cp_, seed);
  const MemoryPlan& plan = cp_.plans.front();
  std::vector<float> scalars(static_cast<size_t>(ScalarSlot::COUNT), 0.0f);
  const bool amp = cp_.project.training.precision == Precision::AMP;
  scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)] = amp ? 65536.0f : 1.0f;
  scalars[static_cast<size_t>(ScalarSlot::INV_LOSS_SCALE)] = amp ? 1.0f / 65536.0f : 1.0f;
  for (int r = 0; r < world_; ++r) {
    for (const InitialTensor& t : weights) {
      Launch l;
      l.kind = LaunchKind::COPY_H2D;
      l.offset = plan.get_dtensor(t.id).offset;
      l.host = const_cast<float*>(t.values.data());
      l.bytes = t.values.size() * sizeof(float);
      l.tag.label = "initial weights";
      backend_.enqueue(r, StreamKind::TRANS, std::move(l));
    }
    Launch s;
    s.kind = LaunchKind::COPY_H2D;
    s.offset = plan.get_dtensor(cp_.engine.scalars).offset;
    s.host = scalars.data();
    s.bytes = scalars.size() * sizeof(float);
    s.tag.label = "initial scalars";
    backend_.enqueue(r, StreamKind::TRANS, std::move(s));
    backend_.synchronize(r, StreamKind::TRANS);
  }
}

void TrainingSession::capture(int rank, const RankStaging& staging) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  for (const ComputationGraph& g : cp_.graphs) {
    auto slot = std::make_unique<AtlasSlot>();
    const int variant = std::max(g.variant, 0);
    slot->resolved = resolve_graph(cp_, g, variant, backend_.arena(rank), rank, world_);
    slot->stream = g.stream;
    TransferHost host;
    if (g.id == GraphId::TRANSFER_A || g.id == GraphId::TRANSFER_B) {
      // A variant nobody feeds (validation when it is switched off) has no transfers.
      if (static_cast<size_t>(variant) >= staging.per_variant.size()) continue;
      host = staging.per_variant[static_cast<size_t>(variant)][g.id == GraphId::TRANSFER_B];
      if (!host.data) continue;
    }
    slot->handle = capture_graph(backend_, cp_, slot->resolved, *rs.capture_events, host);
    rs.atlas->put(g.id, g.variant, std::move(slot));
  }
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

void TrainingSession::transfer(int rank, int variant, int buffer) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  launch(rank, buffer ? GraphId::TRANSFER_B : GraphId::TRANSFER_A, variant, StreamKind::TRANS);
  backend_.record(rank, StreamKind::TRANS, rs.transfer_done[static_cast<size_t>(buffer)]);
}

StepMetrics TrainingSession::train_step(int rank, int variant, int buffer, const Batch* next,
                                        int next_variant, double lr, int64_t step) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  constexpr StreamKind TRANS = StreamKind::TRANS, COMP_1 = StreamKind::COMP_1,
                       UPDATE = StreamKind::UPDATE;
  // 1. learning rate, step number and a cleared overflow flag, H2D on TRANS
  rs.host_scalars = {static_cast<float>(lr), static_cast<float>(step), 0.0f};
  Launch scalars;
  scalars.kind = LaunchKind::COPY_H2D;
  scalars.offset = cp_.plans.front().get_dtensor(cp_.engine.scalars).offset;
  scalars.host = rs.host_scalars.data();
  scalars.bytes = sizeof(rs.host_scalars);
  scalars.tag.label = "scalars H2D";
  backend_.enqueue(rank, TRANS, std::move(scalars));
  backend_.record(rank, TRANS, rs.lr_ready);

  // 2. zero-grad on UPDATE and the first layer's forward on COMP_1, together
  backend_.wait(rank, UPDATE, rs.lr_ready);
  launch(rank, GraphId::ZERO_GRAD, variant, UPDATE);
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
  launch_if(rank, GraphId::DEEP_COMM, variant, UPDATE);

  // 6. the first bucket, metrics, NaN check and scaling, BN statistics
  backend_.wait(rank, UPDATE, rs.first_done);
  launch_if(rank, GraphId::CAST_FIRST_GRAD_FP16_TO_FP32, variant, UPDATE);
  launch_if(rank, GraphId::FIRST_COMM, variant, UPDATE);
  launch(rank, GraphId::METRIC_ACCUMULATE, variant, UPDATE);
  launch(rank, GraphId::NAN_CHECK_AND_GRAD_SCALING, variant, UPDATE);
  launch_if(rank, GraphId::STATS_COMM, variant, UPDATE);
  launch_if(rank, GraphId::UPDATE_STATS, variant, UPDATE);

  // 7. the optimizer; LARS spreads its three groups over the compute streams
  launch_if(rank, GraphId::OPTIMIZER, variant, UPDATE);
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

  // 8. EMA, the FP16 weight copy, and the result back to the host
  launch_if(rank, GraphId::EMA_UPDATE, variant, UPDATE);
  launch_if(rank, GraphId::CAST_MAIN_FP32_TO_FP16, variant, UPDATE);
  StepMetrics m = read_result(rank, cp_.engine.result);
  return m;
}

StepMetrics TrainingSession::read_result(int rank, DTensorId id) {
  RankState& rs = *ranks_[static_cast<size_t>(rank)];
  Launch d2h;
  d2h.kind = LaunchKind::COPY_D2H;
  d2h.offset = cp_.plans.front().get_dtensor(id).offset;
  d2h.host = rs.host_result.data();
  d2h.bytes = sizeof(rs.host_result);
  d2h.tag.label = "result D2H";
  backend_.enqueue(rank, StreamKind::UPDATE, std::move(d2h));
  std::vector<float> scalars = read_tensor(rank, cp_.engine.scalars);  // synchronizes the rank
  StepMetrics m;
  const auto& r = rs.host_result;
  // Sums over the samples (a mean all-reduce keeps the ratios).
  m.samples = r[3];
  if (r[3] > 0) {
    m.loss = r[0] / r[3];
    m.top1 = r[1] / r[3];
    m.top5 = r[2] / r[3];
  }
  m.overflow = scalars[static_cast<size_t>(ScalarSlot::OVERFLOW)] != 0.0f || !std::isfinite(m.loss);
  return m;
}

void TrainingSession::begin_validation(int rank) {
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
  launch_if(rank, GraphId::VAL_RESULT_COMM, 0, StreamKind::UPDATE);
  return read_result(rank, cp_.engine.result_accumulated);
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
  return out;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/checkpoint_state.h"

#include <map>
#include <utility>

#include <renaissance/error.h>
#include <renaissance/project_io.h>
#include "plan/tensor_shards.h"

namespace tr {

namespace {

using Key = std::pair<std::string, std::string>;  // region, tensor name

Key key_of(const DTensor& t) {
  return {std::string(region_name(t.region)), t.name};
}

bool is_ema(const std::string& region) {
  return region.rfind("E_", 0) == 0;
}

// What each persistent tensor of the project is loaded from (an index into
// the checkpoint's tensors), and the problems found on the way.
struct Matching {
  std::vector<std::pair<DTensorId, size_t>> loads;
  std::vector<std::pair<size_t, size_t>> moments;  // ZeRO-1: sharded_moments(cp)[i] from tensor j
  std::vector<std::string> problems;
};

Matching match(const CompiledProject& cp, const Checkpoint& c,
               const std::vector<DTensorId>& persistent) {
  const MemoryPlan& plan = cp.plans.front();
  std::map<Key, size_t> index;
  for (size_t i = 0; i < c.tensors.size(); ++i) index[{c.tensors[i].region, c.tensors[i].name}] = i;
  std::vector<bool> used(c.tensors.size(), false);
  Matching m;
  for (DTensorId id : persistent) {
    const DTensor& t = plan.get_dtensor(id);
    Key k = key_of(t);
    auto it = index.find(k);
    if (it == index.end() && is_ema(k.first)) {
      // EMA switched on since the checkpoint: it starts from the weights.
      it = index.find({"W" + k.first.substr(1), k.second});
    } else if (it != index.end()) {
      used[it->second] = true;
    }
    if (it == index.end()) {
      m.problems.push_back(t.name + " (" + k.first + ", " + whole_shape(t, cp.tensor_ranks).str() +
                           ") is not in the checkpoint");
      continue;
    }
    const CheckpointTensor& ct = c.tensors[it->second];
    const Shape whole = whole_shape(t, cp.tensor_ranks);
    if (!(ct.shape == whole)) {
      m.problems.push_back(t.name + " (" + k.first + ") is " + whole.str() +
                           " in the project but " + ct.shape.str() + " in the checkpoint");
      continue;
    }
    m.loads.emplace_back(id, it->second);
  }
  const std::vector<ShardedMoment> moments = sharded_moments(cp);
  for (size_t i = 0; i < moments.size(); ++i) {
    const ShardedMoment& sm = moments[i];
    auto it = index.find({sm.region, sm.weight->name});
    if (it == index.end()) {
      m.problems.push_back(sm.weight->name + " (" + sm.region + ", " + sm.weight->shape.str() +
                           ") is not in the checkpoint");
      continue;
    }
    used[it->second] = true;
    if (!(c.tensors[it->second].shape == sm.weight->shape)) {
      m.problems.push_back(sm.weight->name + " (" + sm.region + ") is " + sm.weight->shape.str() +
                           " in the project but " + c.tensors[it->second].shape.str() +
                           " in the checkpoint");
      continue;
    }
    m.moments.emplace_back(i, it->second);
  }
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if (!used[i] && !is_ema(c.tensors[i].region))
      m.problems.push_back(c.tensors[i].name + " (" + c.tensors[i].region + ", " +
                           c.tensors[i].shape.str() + ") is in the checkpoint but not the project");
  return m;
}

}  // namespace

Checkpoint take_checkpoint(const CompiledProject& cp, TrainingSession& session,
                           const TrainPosition& position, int rank, const RankShards* shards) {
  const MemoryPlan& plan = cp.plans.front();
  const TrainingSpec& t = cp.project.training;
  Checkpoint c;
  c.project_name = cp.project.name;
  c.project_json = project_to_json(cp.design);
  c.world_size = cp.world_size;
  c.position = position;
  c.seed = t.seed;
  c.global_batch = t.global_batch;
  c.optimizer = std::string(optimizer_name(t.optimizer.kind));
  c.precision = std::string(precision_name(t.precision));
  const std::vector<float> scalars = session.read_scalars(rank);
  c.loss_scale = scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)];
  c.clean_steps = scalars[static_cast<size_t>(ScalarSlot::CLEAN_STEPS)];
  c.updates = static_cast<int64_t>(scalars[static_cast<size_t>(ScalarSlot::UPDATES)]);
  const int T = cp.tensor_ranks;
  for (DTensorId id : persistent_tensors(cp)) {
    const DTensor& d = plan.get_dtensor(id);
    if (!is_tensor_shard(d, T)) {
      c.tensors.push_back(
          {std::string(region_name(d.region)), d.name, d.shape, session.read_tensor(rank, id)});
      continue;
    }
    // A tensor-parallel split tensor: whole, from the parts of the first
    // tensor group's ranks (every group holds the same).
    if (!shards || shards->size() < static_cast<size_t>(T))
      throw std::logic_error("a checkpoint of " + d.name + " without its tensor ranks' parts");
    std::vector<float> whole;
    for (int r = 0; r < T; ++r)
      put_tensor_part(d, T, r, (*shards)[static_cast<size_t>(r)].at(id), whole);
    c.tensors.push_back({std::string(region_name(d.region)), d.name, whole_shape(d, T), whole});
  }
  if (shards && cp.sharded_optimizer)
    for (const ShardedMoment& m : sharded_moments(cp))
      c.tensors.push_back(
          {m.region, m.weight->name, m.weight->shape, gather_moment(cp, m, *shards)});
  return c;
}

void check_checkpoint(const CompiledProject& cp, const Checkpoint& c, const std::string& source) {
  const TrainingSpec& t = cp.project.training;
  const std::string where = "checkpoint '" + source + "'";
  if (c.project_name != cp.project.name)
    throw UsageError(where + " belongs to project '" + c.project_name + "', not '" +
                     cp.project.name + "'");
  if (c.seed != t.seed)
    throw UsageError(where + " was trained with seed " + std::to_string(c.seed) +
                     " but the project has seed " + std::to_string(t.seed) +
                     "; the data order depends on it: resume with --seed " +
                     std::to_string(c.seed));
  if (c.global_batch != t.global_batch)
    throw UsageError(where + " was trained with global batch " + std::to_string(c.global_batch) +
                     " but the project has " + std::to_string(t.global_batch) +
                     "; the data order and the schedule depend on it: resume with --batch " +
                     std::to_string(c.global_batch));
  if (c.optimizer != optimizer_name(t.optimizer.kind))
    throw UsageError(where + " holds the state of optimizer " + c.optimizer +
                     " but the project trains with " +
                     std::string(optimizer_name(t.optimizer.kind)));
  const Matching m = match(cp, c, persistent_tensors(cp));
  if (!m.problems.empty()) {
    std::string text = where + " does not fit the model of project '" + cp.project.name + "' (" +
                       std::to_string(m.problems.size()) + " difference" +
                       (m.problems.size() == 1 ? "" : "s") + "):";
    const size_t shown = std::min<size_t>(m.problems.size(), 6);
    for (size_t i = 0; i < shown; ++i) text += "\n  " + m.problems[i];
    if (shown < m.problems.size())
      text += "\n  ... and " + std::to_string(m.problems.size() - shown) + " more";
    throw UsageError(text);
  }
}

TrainPosition restore_checkpoint(const CompiledProject& cp, TrainingSession& session,
                                 const Checkpoint& c, const std::string& source) {
  check_checkpoint(cp, c, source);
  const Matching m = match(cp, c, persistent_tensors(cp));
  std::vector<InitialTensor> tensors;
  tensors.reserve(m.loads.size());
  for (const auto& [id, index] : m.loads) tensors.push_back({id, c.tensors[index].values});
  std::vector<float> scalars = session.read_scalars(0);
  scalars[static_cast<size_t>(ScalarSlot::UPDATES)] = static_cast<float>(c.updates);
  // A loss scale only means something to the precision that set it.
  if (c.precision == precision_name(cp.project.training.precision)) {
    scalars[static_cast<size_t>(ScalarSlot::LOSS_SCALE)] = c.loss_scale;
    scalars[static_cast<size_t>(ScalarSlot::INV_LOSS_SCALE)] = 1.0f / c.loss_scale;
    scalars[static_cast<size_t>(ScalarSlot::CLEAN_STEPS)] = c.clean_steps;
  }
  session.load_state(tensors, scalars);
  if (cp.sharded_optimizer) {
    RankShards shards(static_cast<size_t>(cp.world_size));
    const MemoryPlan& plan = cp.plans.front();
    for (auto& rank : shards)
      for (DTensorId id : shard_tensors(cp))
        rank[id].assign(static_cast<size_t>(plan.get_dtensor(id).shape.elements()), 0.0f);
    const std::vector<ShardedMoment> moments = sharded_moments(cp);
    for (const auto& [i, j] : m.moments)
      scatter_moment(cp, moments[i], c.tensors[j].values, shards);
    session.load_shards(shards);
  }
  return c.position;
}

int64_t init_from_checkpoint(const CompiledProject& cp, TrainingSession& session,
                             const Checkpoint& c, const std::string& source,
                             std::vector<std::string>& fresh) {
  const MemoryPlan& plan = cp.plans.front();
  // Weights by name whatever their region (a layer may have moved from
  // the first to the deep convolutions); statistics by region and name.
  std::map<std::string, const CheckpointTensor*> weights;
  std::map<Key, const CheckpointTensor*> stats;
  for (const CheckpointTensor& t : c.tensors) {
    if (t.region.rfind("W_", 0) == 0) weights[t.name] = &t;
    if (t.region.rfind("B_PREV_", 0) == 0) stats[{t.region, t.name}] = &t;
  }
  std::vector<InitialTensor> tensors;
  int64_t loaded = 0;
  for (DTensorId id : persistent_tensors(cp)) {
    const DTensor& t = plan.get_dtensor(id);
    const std::string region(region_name(t.region));
    const CheckpointTensor* from = nullptr;
    if (region.rfind("W_", 0) == 0 || is_ema(region)) {
      if (auto it = weights.find(t.name); it != weights.end()) from = it->second;
    } else if (region.rfind("B_PREV_", 0) == 0) {
      if (auto it = stats.find({region, t.name}); it != stats.end()) from = it->second;
    } else {
      continue;  // optimizer moments: a new run's
    }
    if (!from) {
      if (!is_ema(region)) fresh.push_back(t.name + ": not in the checkpoint");
      continue;
    }
    const Shape whole = whole_shape(t, cp.tensor_ranks);
    if (!(from->shape == whole)) {
      if (!is_ema(region))
        fresh.push_back(t.name + ": " + whole.str() + " here, " + from->shape.str() +
                        " in the checkpoint");
      continue;
    }
    tensors.push_back({id, from->values});
    if (!is_ema(region)) ++loaded;
  }
  if (loaded == 0)
    throw UsageError("checkpoint '" + source + "' (of project '" + c.project_name +
                     "') has no weight of the same name and shape as project '" + cp.project.name +
                     "' needs, so there is nothing to start from");
  session.load_state(tensors, {});
  return loaded;
}

}  // namespace tr

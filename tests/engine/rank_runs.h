// SPDX-License-Identifier: GPL-3.0-or-later
// Test helpers for data-parallel and checkpoint tests: small synthetic
// projects on any number of CPU ranks, and a training run that records every
// step's loss and, per rank, what the test wants to compare across ranks.
#pragma once

#include <QtGlobal>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <mutex>

#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "model_builder.h"
#include "runtime/trainer.h"
#include "runtime/training_session.h"

namespace rank_runs {

// 272 training samples in global batches of 32: 8 full batches and a partial
// one of 16 (which splits evenly over 1, 2 and 4 ranks); 200 validation
// samples in global batches of 100 on any rank count.
inline tr::Project synthetic(int world, bool bn, bool dropout = false) {
  using namespace tr;
  ModelBuilder b;
  b.synthetic_data(8, 8, 1, 4, 272, 200, 100 / world);
  Project& p = b.project();
  p.name = bn ? "ranks-bn" : "ranks-plain";
  p.training.global_batch = 32;
  p.training.epochs = 1;
  p.training.optimizer.lr = 0.05;
  p.training.seed = 5;
  p.training.devices.ids.clear();
  for (int r = 0; r < world; ++r) p.training.devices.ids.push_back(r);
  b.node("in", LayerType::Input, input(8, 8, 1))
      .node("conv1", LayerType::Conv2d, conv(6, 3, 3, 1, 1, 1, 1, true));
  if (bn) b.node("bn1", LayerType::BatchNorm2d);
  b.node("relu1", LayerType::ReLU)
      .node("pool1", LayerType::MaxPool2d, pool(2, 2))
      .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, !bn));
  if (bn) b.node("bn2", LayerType::BatchNorm2d);
  b.node("relu2", LayerType::ReLU);
  if (dropout) b.node("drop", LayerType::Dropout);
  b.node("fc", LayerType::Linear, linear(4)).node("loss", LayerType::SoftmaxCrossEntropy);
  if (bn)
    b.chain({"in", "conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "relu2"});
  else
    b.chain({"in", "conv1", "relu1", "pool1", "conv2", "relu2"});
  if (dropout)
    b.chain({"relu2", "drop", "fc", "loss"});
  else
    b.chain({"relu2", "fc", "loss"});
  return b.build();
}

// The values of every tensor of `rank` in regions first..last, concatenated.
inline std::vector<float> read_regions(tr::TrainingSession& s, int rank, tr::Region first,
                                       tr::Region last) {
  std::vector<float> out;
  const tr::CompiledProject& cp = s.compiled();
  for (tr::DTensorId id : tr::persistent_tensors(cp)) {
    const tr::Region r = cp.plans.front().get_dtensor(id).region;
    if (r < first || r > last) continue;
    const std::vector<float> v = s.read_tensor(rank, id);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

inline std::vector<float> weights(tr::TrainingSession& s, int rank) {
  return read_regions(s, rank, tr::Region::W_BN_BIAS, tr::Region::W_DEEP_CONV);
}

struct Run {
  tr::TrainReport report;
  std::vector<double> losses;  // rank 0's view, per step of this run
  // Per global step: per rank, the master weights and the BN running statistics.
  std::map<int64_t, std::vector<std::vector<float>>> weights, stats;
};

inline Run run(const tr::Project& p, const tr::TrainOptions& options = {},
               const tr::DataSource* data = nullptr, const tr::CompileOptions& compile = {}) {
  using namespace tr;
  const CompiledProject cp = compile_project(p, compile);
  std::unique_ptr<DataSource> own;
  if (!data) {
    own = load_dataset(cp.project.dataset, "", cp.project.training.seed);
    data = own.get();
  }
  cpu::CpuBackendOptions bo;
  bo.world = cp.world_size;
  bo.tensor = cp.tensor_ranks;
  auto backend = cpu::make_cpu_backend(bo);
  Run r;
  std::mutex mutex;
  TrainCallbacks cb;
  cb.on_step = [&](const StepReport& s) { r.losses.push_back(s.loss); };
  cb.on_rank_step = [&](int rank, const StepReport& s, TrainingSession& session) {
    std::vector<float> w = weights(session, rank);
    std::vector<float> st = read_regions(session, rank, Region::B_PREV_MEAN, Region::B_PREV_VAR);
    std::lock_guard<std::mutex> lock(mutex);
    for (auto* m : {&r.weights, &r.stats}) (*m)[s.step].resize(static_cast<size_t>(cp.world_size));
    r.weights[s.step][static_cast<size_t>(rank)] = std::move(w);
    r.stats[s.step][static_cast<size_t>(rank)] = std::move(st);
  };
  // A deadlock must fail the test, not hang it.
  auto done =
      std::async(std::launch::async, [&] { r.report = train(cp, *backend, *data, options, cb); });
  if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
    qFatal("training %s on %d ranks did not finish in 120 s", p.name.c_str(), cp.world_size);
  done.get();
  return r;
}

// ||a - b|| / ||b||
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 1e300;
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    n += static_cast<double>(b[i]) * b[i];
  }
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace rank_runs

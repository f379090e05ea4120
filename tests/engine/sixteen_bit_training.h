// SPDX-License-Identifier: GPL-3.0-or-later
// What the 16-bit precision training tests (AMP, BF16) share: a small BN
// CNN with a residual add on learnable synthetic 8x8 data, the bytes of a
// parameter series, and a training run that looks at rank 0 after each step.
#pragma once

#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "compile/compiler.h"
#include "data/dataset.h"
#include "model_builder.h"
#include "runtime/trainer.h"

namespace tr::test {

// Four input channels keep a 16-bit input buffer unpadded (C aligns to 4),
// and 8 and 6 channel features exercise both padded and unpadded slots.
inline Project residual_bn_project(Precision precision) {
  ModelBuilder b;
  b.synthetic_data(8, 8, 4, 4, 1000, 200, 100);
  Project& p = b.project();
  p.training.global_batch = 64;
  p.training.epochs = 3;
  p.training.optimizer.lr = 0.05;
  p.training.optimizer.momentum = 0.9;
  p.training.precision = precision;
  p.training.seed = 7;
  b.node("in", LayerType::Input, input(8, 8, 4))
      .node("conv1", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, true))
      .node("bn1", LayerType::BatchNorm2d)
      .node("relu1", LayerType::ReLU)
      .node("pool1", LayerType::MaxPool2d, pool(2, 2))
      .node("conv2", LayerType::Conv2d, conv(8, 3, 3, 1, 1, 1, 1, false))
      .node("bn2", LayerType::BatchNorm2d)
      .node("add", LayerType::Add)
      .node("relu2", LayerType::ReLU)
      .node("conv3", LayerType::Conv2d, conv(6, 1, 1, 1, 1, 0, 0, true))
      .node("tanh", LayerType::Tanh)
      .node("fc", LayerType::Linear, linear(4))
      .node("loss", LayerType::SoftmaxCrossEntropy);
  b.chain({"in", "conv1", "bn1", "relu1", "pool1", "conv2", "bn2", "add", "relu2", "conv3", "tanh",
           "fc", "loss"})
      .edge("pool1", "add", 1);
  return b.build();
}

// The bytes of parameter series `s` (BN_BIAS .. DEEP_CONV) in rank 0's arena.
inline ByteRange series(const CompiledProject& cp, ParamSeries s) {
  return cp.plans.front().region_range(param_region(s, ParamKind::BN_BIAS),
                                       param_region(s, ParamKind::DEEP_CONV));
}

// The parameters that have a 16-bit copy: all but batch norm's, which stay
// FP32 at every precision.
inline ByteRange copied_series(const CompiledProject& cp, ParamSeries s) {
  return cp.plans.front().region_range(param_region(s, ParamKind::FC_BIAS),
                                       param_region(s, ParamKind::DEEP_CONV));
}

struct Trained {
  TrainReport report;
  std::vector<double> losses, loss_scales;
};

// Trains `p`; `at_step(step, backend, cp)` runs on rank 0 after each step,
// while the rank is idle: an on_rank_step callback makes the trainer finish
// every step before it enqueues the next.
template <class F>
Trained train_with(const Project& p, const TrainOptions& o, F at_step) {
  const CompiledProject cp = compile_project(p);
  auto data = load_dataset(cp.project.dataset, "", cp.project.training.seed);
  auto backend = cpu::make_cpu_backend({cp.world_size, true});
  Trained t;
  TrainCallbacks cb;
  cb.on_rank_step = [&](int rank, const StepReport& s, TrainingSession&) {
    if (rank != 0) return;
    t.losses.push_back(s.loss);
    t.loss_scales.push_back(s.loss_scale);
    at_step(s.step, *backend, cp);
  };
  t.report = train(cp, *backend, *data, o, cb);
  return t;
}

}  // namespace tr::test

// SPDX-License-Identifier: GPL-3.0-or-later
// Test helper: a layer's or a run's settings as the compiler resolves them
// for the kernels (compile/node_params.h), for tests that call one kernel
// with hand-made arguments. Each answer is kept for the life of the test.
#pragma once

#include <deque>
#include <mutex>

#include <renaissance/project.h>
#include "compile/node_params.h"

namespace tr::test {

namespace detail {
template <typename T>
const T* keep(T value) {
  static std::mutex mutex;
  static std::deque<T> kept;
  std::lock_guard<std::mutex> lock(mutex);
  kept.push_back(std::move(value));
  return &kept.back();
}
}  // namespace detail

inline const NodeParams* resolved(const LayerNode& layer) {
  return detail::keep(layer_node_params(layer));
}
inline const NodeParams* resolved(const LayerNode* layer) {
  return layer ? resolved(*layer) : nullptr;
}
inline const TrainingConstants* resolved(const TrainingSpec& training) {
  return detail::keep(training_constants(training));
}
inline const TrainingConstants* resolved(const TrainingSpec* training) {
  return training ? resolved(*training) : nullptr;
}
// BN_EQ_PARAMS's settings: the eps of every layer of `model`.
inline const NodeParams* resolved_bn_eq(const ModelGraph& model) {
  NodeParams p;
  p.owner_eps = every_layer_eps(model);
  return detail::keep(std::move(p));
}

}  // namespace tr::test

// SPDX-License-Identifier: GPL-3.0-or-later
// A SelfAttention launch's dropout (core/attention_dropout.h), resolved
// from the launch's arguments for the CPU kernels and their CUDA twins alike.
#pragma once

#include <cstdint>

#include "core/attention_dropout.h"
#include "runtime/kernel_args.h"

namespace tr {

// The layer's dropout, on in a training launch (a forward that saves the
// log-sum-exp, and the backward) when its rate is above 0.
inline AttentionDropoutArgs attention_dropout_args(const KernelArgs& a, bool training) {
  AttentionDropoutArgs d;
  const double p = a.params().attention_dropout;
  if (!training || !(p > 0.0)) return d;
  d.on = true;
  d.seed = a.seed;
  d.layer = a.node ? a.node->layer : -1;
  d.threshold = attention_dropout_threshold(p);
  d.scale = attention_dropout_scale(p);
  return d;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// BnEqLayer: one BN layer's operands of RangeOp::BN_EQ_PARAMS (running stats
// and weights in, equivalent scale and bias out) as plain pointers, so CUDA
// kernels can take it without the engine's headers.
#pragma once

#include <cstdint>

namespace tr {

struct BnEqLayer {
  const float* mean = nullptr;
  const float* var = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* scale = nullptr;
  float* bias = nullptr;
  int64_t channels = 0;
  double eps = 1e-5;
};

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The training settings kernels read as well as the project: the precision
// and the optimizer's constants. Plain values below the model, so a kernel's
// arguments (compile/node_params.h) need nothing of the project.
#pragma once

#include <renaissance/dtype.h>

namespace tr {

enum class OptimizerKind { SGD, Adam, LARS };
// FP32 throughout; AMP: FP16 storage with a dynamic loss scale; BF16:
// bfloat16 storage, FP32's range, no loss scale.
enum class Precision { FP32, AMP, BF16 };

// The element type of the features, their gradients, the input batches and
// the weight copy (A series) under a precision.
constexpr DType storage_dtype(Precision p) noexcept {
  return p == Precision::AMP ? DType::FP16 : p == Precision::BF16 ? DType::BF16 : DType::FP32;
}

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::SGD;
  double lr = 0.05;
  double momentum = 0.9;  // SGD, LARS
  double weight_decay = 5e-4;
  bool nesterov = false;                               // SGD
  double beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;  // Adam
  double trust_coefficient = 0.001;                    // LARS

  bool operator==(const OptimizerSpec&) const = default;
};

}  // namespace tr

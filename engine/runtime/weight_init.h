// SPDX-License-Identifier: GPL-3.0-or-later
// Initial weights, generated once on the host from the seed with a
// counter-based generator, so a seed gives the same weights on any machine
// and at any world size. The defaults are PyTorch's: convolution and linear
// weights and biases uniform in +-1/sqrt(fan_in), batch norm scale 1 and
// shift 0, running mean 0 and variance 1.
#pragma once

#include <cstdint>
#include <vector>

#include "compile/compiler.h"

namespace tr {

// One tensor's initial values (FP32), with where they go in the arena.
struct InitialTensor {
  DTensorId id = kNoTensor;
  std::vector<float> values;
};

// Master weights (W), their EMA copy (E) and the BN running statistics.
std::vector<InitialTensor> initial_weights(const CompiledProject& cp, uint64_t seed);

// Writes the tensors into an arena laid out by `plan` (host memory: the CPU
// arena, or a staging copy of it for a device).
void write_initial_weights(const std::vector<InitialTensor>& tensors, const MemoryPlan& plan,
                           uint8_t* arena);

}  // namespace tr

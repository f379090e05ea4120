// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA ReLU, Tanh and SiLU (FP32, compact, by element count) and the
// two-input add, on raw device pointers. Semantics are those of
// backends/cpu/kernels/activations.cpp and elementwise.cpp; each launch
// returns its error without synchronising.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace tr::cuda {

enum class Activation : int { RELU, TANH, SILU };

// y = f(x)
cudaError_t launch_activation_fwd(Activation f, const float* x, float* y, uint64_t n,
                                  cudaStream_t stream);
// dx (+)= dy * f'(.) where `saved` is what the graph hands the backward:
// the input x for ReLU (x > 0 exactly where y > 0, so either works) and
// SiLU, the output y for Tanh.
cudaError_t launch_activation_bwd(Activation f, const float* saved, const float* dy, float* dx,
                                  uint64_t n, bool accumulate, cudaStream_t stream);
// y = a + b
cudaError_t launch_add(const float* a, const float* b, float* y, uint64_t n, cudaStream_t stream);

}  // namespace tr::cuda

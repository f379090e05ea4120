// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA ReLU and the activation family (compile/ops.h: Activation), the two-input add and the
// copy-or-add of gradients, over `n` logical values of FP32 or FP16 feature views (see
// feature_view.h) on raw device pointers. Semantics are those of
// backends/cpu/kernels/activations.cpp and elementwise.cpp, FP16 operands
// computed in FP32 and rounded once as the CPU's staging does; padding lanes
// of the output are written as zero. Each launch returns its error without
// synchronising.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include <renaissance/layer_type.h>
#include "backends/cuda/feature_view.h"
#include "compile/ops.h"

namespace tr::cuda {

// y = relu(x); dx (+)= dy where saved > 0, `saved` being x or y (x > 0
// exactly where y > 0, so either works).
cudaError_t launch_relu_fwd(Elem e, uint64_t n, FeatureView x, FeatureView y, cudaStream_t stream);
cudaError_t launch_relu_bwd(Elem e, uint64_t n, FeatureView saved, FeatureView dy, FeatureView dx,
                            bool accumulate, cudaStream_t stream);
// y = f(x) for ACTIVATION_FWD (`slope`: LeakyReLU's for x < 0).
cudaError_t launch_activation_fwd(Activation f, float slope, Elem e, uint64_t n, FeatureView x,
                                  FeatureView y, cudaStream_t stream);
// dx (+)= dy * f'(.) where `saved` is what the graph hands the backward:
// the output y or the input x, as activation_backward_reads_output says.
cudaError_t launch_activation_bwd(Activation f, float slope, Elem e, uint64_t n, FeatureView saved,
                                  FeatureView dy, FeatureView dx, bool accumulate,
                                  cudaStream_t stream);
// y = (accumulate ? y + a : a), then + b when `b` is given, in float and
// rounded once: the add, a copy between layouts, and a gradient slot's
// accumulate (twice over when both outputs of an add's backward are one slot).
cudaError_t launch_sum(Elem e, uint64_t n, FeatureView a, const FeatureView* b, FeatureView y,
                       bool accumulate, cudaStream_t stream);
// ADD_RELU_FWD: y = relu(x0 + x1), the ReLU on the sum as stored (so -0 stays).
cudaError_t launch_add_relu_fwd(Elem e, uint64_t n, FeatureView x0, FeatureView x1, FeatureView y,
                                cudaStream_t stream);
// Which of ADD_RELU_BWD's outputs there are and which add onto what they
// hold; `same`: both are one tensor (dx1 then adds onto dx0's value).
struct AddReluOutputs {
  bool has0 = false, has1 = false, add0 = false, add1 = false, same = false;
};
// ADD_RELU_BWD: dx0 and dx1 (+)= dy where y > 0, in one pass; an absent
// output's view is ignored.
cudaError_t launch_add_relu_bwd(Elem e, uint64_t n, FeatureView y, FeatureView dy, FeatureView dx0,
                                FeatureView dx1, AddReluOutputs o, cudaStream_t stream);

// The inputs of a concatenation, in port order (by value into the kernel).
struct ConcatParts {
  FeatureView part[kMaxInputPorts];
  int count = 0;
};
// The slices of dy one gradient tensor takes: more than one when several
// ports read the same tensor (x concatenated with itself).
struct ConcatSlices {
  int64_t from[kMaxInputPorts] = {};
  int count = 0;
};

// Channel concatenation over `rows` (N*H*W) positions, each view one row per
// position (cols: its channels, stride: their padded width): y's channels are
// the parts' in order, y's padding lanes zero.
cudaError_t launch_concat_fwd(Elem e, uint64_t rows, const ConcatParts& x, FeatureView y,
                              cudaStream_t stream);
// dx (+)= the sum of dy's channels [from, from + dx.cols) over the slices, in
// one pass that rounds once.
cudaError_t launch_concat_bwd(Elem e, uint64_t rows, FeatureView dy, const ConcatSlices& slices,
                              FeatureView dx, bool accumulate, cudaStream_t stream);

}  // namespace tr::cuda

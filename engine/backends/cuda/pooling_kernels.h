// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA max, average and global average pooling (NHWC, FP32 or FP16 storage
// with FP32 arithmetic, channels `cs` apart: FP16 features pad them) on raw
// device pointers, with the semantics of backends/cpu/kernels/pooling.cpp:
// torch's MaxPool2d (first maximum in row-major order wins, NaN wins) and
// AvgPool2d with count_include_pad. Backward kernels gather per input element,
// adding the windows' contributions in the CPU's window order, so no atomics.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/feature_view.h"

namespace tr::cuda {

struct PoolGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input
  int64_t oh = 0, ow = 0;              // output
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  int64_t cs = 0;  // channel stride of every operand (>= c; padding lanes written as zero)
  Elem elem = Elem::F32;
};

cudaError_t launch_maxpool_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream);
// dx (+)= the gradient of each window routed to its first maximum
cudaError_t launch_maxpool_bwd(const PoolGeometry& g, const void* x, const void* y, const void* dy,
                               void* dx, bool accumulate, cudaStream_t stream);
// y as launch_maxpool_fwd, and `where` (INT8, channels `ws` apart): each
// window's first maximum's position in the kernel, row-major; -1 for NaN
cudaError_t launch_maxpool_fwd_where(const PoolGeometry& g, const void* x, void* y, int8_t* where,
                                     int64_t ws, cudaStream_t stream);
// dx (+)= launch_maxpool_bwd's routing, from the positions alone
cudaError_t launch_maxpool_bwd_where(const PoolGeometry& g, const int8_t* where, int64_t ws,
                                     const void* dy, void* dx, bool accumulate,
                                     cudaStream_t stream);
cudaError_t launch_avgpool_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream);
cudaError_t launch_avgpool_bwd(const PoolGeometry& g, const void* dy, void* dx, bool accumulate,
                               cudaStream_t stream);
// Over all of h x w: y is n x c.
cudaError_t launch_gap_fwd(const PoolGeometry& g, const void* x, void* y, cudaStream_t stream);
cudaError_t launch_gap_bwd(const PoolGeometry& g, const void* dy, void* dx, bool accumulate,
                           cudaStream_t stream);

}  // namespace tr::cuda

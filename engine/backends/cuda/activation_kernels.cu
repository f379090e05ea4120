// SPDX-License-Identifier: GPL-3.0-or-later
// Elementwise activation kernels and the two-input add: one grid-stride
// kernel per direction, the function picked by a template functor so the
// inner loop has no switch.
#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/launch_config.cuh"

namespace tr::cuda {

namespace {

// Full-precision expf/tanhf, not the __expf intrinsics: the CPU twin's
// polynomials are within 2 ulp, and so are these.
__device__ inline float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
}

struct Relu {
  // NaN passes through (x < 0 is false), as on the CPU, so the NaN check sees it.
  __device__ float fwd(float x) const { return x < 0.0f ? 0.0f : x; }
  // Nothing passes at 0 (PyTorch's threshold_backward); x or y alike.
  __device__ float bwd(float x, float g) const { return x > 0.0f ? g : 0.0f; }
};

struct Tanh {
  __device__ float fwd(float x) const { return tanhf(x); }
  __device__ float bwd(float y, float g) const { return g * (1.0f - y * y); }
};

struct Silu {
  __device__ float fwd(float x) const { return x * sigmoid(x); }
  __device__ float bwd(float x, float g) const {
    const float s = sigmoid(x);
    return g * s * (1.0f + x * (1.0f - s));
  }
};

template <class F>
__global__ void fwd_kernel(F f, const float* x, float* y, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) y[i] = f.fwd(x[i]);
}

template <class F>
__global__ void bwd_kernel(F f, const float* saved, const float* dy, float* dx, uint64_t n,
                           bool accumulate) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) {
    const float d = f.bwd(saved[i], dy[i]);
    dx[i] = accumulate ? dx[i] + d : d;
  }
}

__global__ void add_kernel(const float* a, const float* b, float* y, uint64_t n) {
  for (uint64_t i = first_index(); i < n; i += grid_stride()) y[i] = a[i] + b[i];
}

template <class F>
cudaError_t fwd(F f, const float* x, float* y, uint64_t n, cudaStream_t stream) {
  if (n) fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, x, y, n);
  return cudaGetLastError();
}

template <class F>
cudaError_t bwd(F f, const float* saved, const float* dy, float* dx, uint64_t n, bool accumulate,
                cudaStream_t stream) {
  if (n) bwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(f, saved, dy, dx, n, accumulate);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_activation_fwd(Activation f, const float* x, float* y, uint64_t n,
                                  cudaStream_t stream) {
  switch (f) {
    case Activation::RELU:
      return fwd(Relu{}, x, y, n, stream);
    case Activation::TANH:
      return fwd(Tanh{}, x, y, n, stream);
    case Activation::SILU:
      return fwd(Silu{}, x, y, n, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_activation_bwd(Activation f, const float* saved, const float* dy, float* dx,
                                  uint64_t n, bool accumulate, cudaStream_t stream) {
  switch (f) {
    case Activation::RELU:
      return bwd(Relu{}, saved, dy, dx, n, accumulate, stream);
    case Activation::TANH:
      return bwd(Tanh{}, saved, dy, dx, n, accumulate, stream);
    case Activation::SILU:
      return bwd(Silu{}, saved, dy, dx, n, accumulate, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_add(const float* a, const float* b, float* y, uint64_t n, cudaStream_t stream) {
  if (n) add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
  return cudaGetLastError();
}

}  // namespace tr::cuda

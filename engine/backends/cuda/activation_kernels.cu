// SPDX-License-Identifier: GPL-3.0-or-later
// Elementwise activation kernels, the add and the copy-or-add: one
// grid-stride kernel per direction over the output's positions (padding
// lanes included, written as zero), templated on the storage type; the
// function is picked by a template functor so the inner loop has no switch.
#include "backends/cuda/activation_kernels.h"
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/vector_io.cuh"

#include <initializer_list>

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

struct Relu6 {
  __device__ float fwd(float x) const { return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x); }
  __device__ float bwd(float y, float g) const { return y > 0.0f && y < 6.0f ? g : 0.0f; }
};

struct LeakyRelu {
  float slope;  // 0 <= slope < 1: y > 0 exactly where x > 0
  __device__ float fwd(float x) const { return x > 0.0f ? x : slope * x; }
  __device__ float bwd(float y, float g) const { return y > 0.0f ? g : slope * g; }
};

struct Gelu {
  __device__ float fwd(float x) const { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
  __device__ float bwd(float x, float g) const {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    return g * (cdf + x * 0.39894228040143268f * expf(-0.5f * x * x));
  }
};

struct Sigmoid {
  __device__ float fwd(float x) const { return sigmoid(x); }
  __device__ float bwd(float y, float g) const { return g * y * (1.0f - y); }
};

template <class F, class T>
__global__ void fwd_kernel(F f, uint64_t n, Rows<const T> x, Rows<T> y) {
  const uint64_t end = y.positions(n);
  for (uint64_t i = first_index(); i < end; i += grid_stride()) {
    uint64_t j;
    store(y.p, i, y.logical(i, j) ? f.fwd(x.get(j)) : 0.0f);
  }
}

template <class F, class T>
__global__ void bwd_kernel(F f, uint64_t n, Rows<const T> saved, Rows<const T> dy, Rows<T> dx,
                           bool accumulate) {
  const uint64_t end = dx.positions(n);
  for (uint64_t i = first_index(); i < end; i += grid_stride()) {
    uint64_t j;
    if (!dx.logical(i, j)) {
      store(dx.p, i, 0.0f);
      continue;
    }
    const float d = f.bwd(saved.get(j), dy.get(j));
    store(dx.p, i, accumulate ? load(dx.p, i) + d : d);
  }
}

// The ReLU of a fused add (ADD_RELU_FWD) on the sum as storage holds it, so
// that a negative sum stored as -0 stays -0, as the unfused pair leaves it.
template <class T>
__device__ inline float relu_of_stored(float v) {
  const float s = stored_as(static_cast<const T*>(nullptr), v);
  return s < 0.0f ? 0.0f : s;
}

template <class T>
__global__ void sum_kernel(uint64_t n, Rows<const T> a, Rows<const T> b, bool has_b, Rows<T> y,
                           bool accumulate, bool relu) {
  const uint64_t end = y.positions(n);
  for (uint64_t i = first_index(); i < end; i += grid_stride()) {
    uint64_t j;
    if (!y.logical(i, j)) {
      store(y.p, i, 0.0f);
      continue;
    }
    // A copy keeps -0: no add of a zero unless one is asked for.
    float v = accumulate ? load(y.p, i) + a.get(j) : a.get(j);
    if (has_b) v = v + b.get(j);
    store(y.p, i, relu ? relu_of_stored<T>(v) : v);
  }
}

// ADD_RELU_BWD: dx0 and dx1 (+)= dy where y > 0, all four of one layout.
// One tensor for both (`same`): the second adds onto the first in float,
// stored once, as ADD_BWD's pass over one slot.
template <class T>
__global__ void add_relu_bwd_kernel(uint64_t n, Rows<const T> y, Rows<const T> dy, Rows<T> d0,
                                    Rows<T> d1, AddReluOutputs o) {
  const Rows<T>& layout = o.has0 ? d0 : d1;
  const uint64_t end = layout.positions(n);
  for (uint64_t i = first_index(); i < end; i += grid_stride()) {
    uint64_t j;
    if (!layout.logical(i, j)) {
      if (o.has0) store(d0.p, i, 0.0f);
      if (o.has1) store(d1.p, i, 0.0f);
      continue;
    }
    const float g = y.get(j) > 0.0f ? dy.get(j) : 0.0f;
    if (o.same) {
      const float first = o.add0 ? load(d0.p, i) + g : g;
      store(d0.p, i, o.add1 ? first + g : g);
      continue;
    }
    if (o.has0) store(d0.p, i, o.add0 ? load(d0.p, i) + g : g);
    if (o.has1) store(d1.p, i, o.add1 ? load(d1.p, i) + g : g);
  }
}

template <class T>
__global__ void concat_fwd_kernel(uint64_t rows, ConcatParts x, Rows<T> y) {
  const uint64_t stride = static_cast<uint64_t>(y.stride);
  for (uint64_t i = first_index(); i < rows * stride; i += grid_stride()) {
    const uint64_t r = i / stride, k = i - r * stride;
    float v = 0.0f;  // y's padding lanes
    uint64_t from = 0;
    for (int q = 0; q < x.count; ++q) {
      const FeatureView& p = x.part[q];
      const uint64_t cq = static_cast<uint64_t>(p.cols);
      if (k < from + cq) {
        v = load(static_cast<const T*>(p.data), r * static_cast<uint64_t>(p.stride) + (k - from));
        break;
      }
      from += cq;
    }
    store(y.p, i, v);
  }
}

template <class T>
__global__ void concat_bwd_kernel(uint64_t rows, Rows<const T> dy, ConcatSlices slices, Rows<T> dx,
                                  bool accumulate) {
  const uint64_t stride = static_cast<uint64_t>(dx.stride), cq = static_cast<uint64_t>(dx.cols);
  for (uint64_t i = first_index(); i < rows * stride; i += grid_stride()) {
    const uint64_t r = i / stride, k = i - r * stride;
    if (k >= cq) {
      store(dx.p, i, 0.0f);
      continue;
    }
    const uint64_t at = r * static_cast<uint64_t>(dy.stride) + k;
    // A copy keeps -0: no add of a zero unless one is asked for.
    const uint64_t first = at + static_cast<uint64_t>(slices.from[0]);
    float v = accumulate ? load(dx.p, i) + load(dy.p, first) : load(dy.p, first);
    for (int s = 1; s < slices.count; ++s)
      v = v + load(dy.p, at + static_cast<uint64_t>(slices.from[s]));
    store(dx.p, i, v);
  }
}

// ---------------------------------------------------------------------------
// The same kernels on compact tensors, 16 bytes a thread (vector_io.cuh):
// no padding lanes and no row arithmetic, the same per-element functions.

template <class F, class T, class I>
__global__ void fwd_vec_kernel(F f, I vectors, const T* x, T* y) {
  for (I i = static_cast<I>(first_index()); i < vectors; i += static_cast<I>(grid_stride())) {
    const Vec<T> in = reinterpret_cast<const Vec<T>*>(x)[i];
    Vec<T> out;
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) store(out.v, k, f.fwd(load(in.v, k)));
    reinterpret_cast<Vec<T>*>(y)[i] = out;
  }
}

template <class F, class T, class I>
__global__ void bwd_vec_kernel(F f, I vectors, const T* saved, const T* dy, T* dx,
                               bool accumulate) {
  for (I i = static_cast<I>(first_index()); i < vectors; i += static_cast<I>(grid_stride())) {
    const Vec<T> s = reinterpret_cast<const Vec<T>*>(saved)[i];
    const Vec<T> g = reinterpret_cast<const Vec<T>*>(dy)[i];
    Vec<T> out;
    if (accumulate) out = reinterpret_cast<const Vec<T>*>(dx)[i];
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) {
      const float d = f.bwd(load(s.v, k), load(g.v, k));
      store(out.v, k, accumulate ? load(out.v, k) + d : d);
    }
    reinterpret_cast<Vec<T>*>(dx)[i] = out;
  }
}

template <class T, class I>
__global__ void sum_vec_kernel(I vectors, const T* a, const T* b, T* y, bool accumulate,
                               bool relu) {
  for (I i = static_cast<I>(first_index()); i < vectors; i += static_cast<I>(grid_stride())) {
    const Vec<T> va = reinterpret_cast<const Vec<T>*>(a)[i];
    Vec<T> vb, out;
    if (b) vb = reinterpret_cast<const Vec<T>*>(b)[i];
    if (accumulate) out = reinterpret_cast<const Vec<T>*>(y)[i];
#pragma unroll
    for (int k = 0; k < kVec<T>; ++k) {
      // A copy keeps -0: no add of a zero unless one is asked for.
      float v = accumulate ? load(out.v, k) + load(va.v, k) : load(va.v, k);
      if (b) v = v + load(vb.v, k);
      store(out.v, k, relu ? relu_of_stored<T>(v) : v);
    }
    reinterpret_cast<Vec<T>*>(y)[i] = out;
  }
}

// Concatenation, 16 bytes a thread where every part's channels and every
// stride are whole vectors: a vector then never straddles two parts.
template <class T, class I>
__global__ void concat_fwd_vec_kernel(I rows, ConcatParts x, Rows<T> y) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(y.stride / N);
  for (I i = static_cast<I>(first_index()); i < rows * groups; i += static_cast<I>(grid_stride())) {
    const I r = i / groups;
    const int64_t k0 = static_cast<int64_t>(i - r * groups) * N;
    Vec<T> v = {};  // y's padding lanes
    int64_t from = 0;
    for (int q = 0; q < x.count; ++q) {
      const FeatureView& p = x.part[q];
      if (k0 < from + p.cols) {
        v = load_vec(static_cast<const T*>(p.data),
                     static_cast<uint64_t>(r) * p.stride + (k0 - from));
        break;
      }
      from += p.cols;
    }
    store_vec(y.p, static_cast<uint64_t>(i) * N, v);
  }
}

template <class T, class I>
__global__ void concat_bwd_vec_kernel(I rows, Rows<const T> dy, ConcatSlices slices, Rows<T> dx,
                                      bool accumulate) {
  constexpr int N = kVec<T>;
  const I groups = static_cast<I>(dx.stride / N);
  for (I i = static_cast<I>(first_index()); i < rows * groups; i += static_cast<I>(grid_stride())) {
    const I r = i / groups;
    const int64_t k0 = static_cast<int64_t>(i - r * groups) * N;
    const uint64_t out = static_cast<uint64_t>(i) * N;
    if (k0 >= dx.cols) {
      store_vec(dx.p, out, Vec<T>{});
      continue;
    }
    const uint64_t at = static_cast<uint64_t>(r) * dy.stride + k0;
    const Vec<T> first = load_vec(dy.p, at + slices.from[0]);
    Vec<T> old;
    if (accumulate) old = load_vec(dx.p, out);
    float acc[N];
    // A copy keeps -0: no add of a zero unless one is asked for.
#pragma unroll
    for (int k = 0; k < N; ++k)
      acc[k] = accumulate ? load(old.v, k) + load(first.v, k) : load(first.v, k);
    for (int s = 1; s < slices.count; ++s) {
      const Vec<T> d = load_vec(dy.p, at + slices.from[s]);
#pragma unroll
      for (int k = 0; k < N; ++k) acc[k] = acc[k] + load(d.v, k);
    }
    Vec<T> v;
#pragma unroll
    for (int k = 0; k < N; ++k) store(v.v, k, acc[k]);
    store_vec(dx.p, out, v);
  }
}

bool compact(std::initializer_list<const FeatureView*> views) {
  for (const FeatureView* v : views)
    if (v && v->cols != v->stride) return false;
  return true;
}

// Runs vec(blocks, vectors) with 32- or 64-bit indices when every view is
// compact and on 16 bytes and n is whole vectors; false otherwise.
template <class T, class Launch>
bool launch_vectors(uint64_t n, std::initializer_list<const FeatureView*> views, Launch vec) {
  if (!compact(views)) return false;
  for (const FeatureView* v : views)
    if (v && !vectorisable<T>(n, {v->data})) return false;
  const uint64_t vectors = n / static_cast<uint64_t>(kVec<T>);
  vec(blocks_for(vectors), vectors, small_index(n));
  return true;
}

// Launch geometry from the output's positions, which bound every loop.
uint64_t positions(uint64_t n, const FeatureView& y) {
  return y.cols == y.stride ? n : n / static_cast<uint64_t>(y.cols) * y.stride;
}

template <class F>
cudaError_t fwd(F f, Elem e, uint64_t n, FeatureView x, FeatureView y, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const bool vectorised =
        launch_vectors<T>(n, {&x, &y}, [&](unsigned blocks, uint64_t vectors, bool small) {
          const auto* xp = static_cast<const T*>(x.data);
          auto* yp = static_cast<T*>(y.data);
          if (small)
            fwd_vec_kernel<<<blocks, kThreads, 0, stream>>>(f, static_cast<uint32_t>(vectors), xp,
                                                            yp);
          else
            fwd_vec_kernel<<<blocks, kThreads, 0, stream>>>(f, vectors, xp, yp);
        });
    if (!vectorised)
      fwd_kernel<<<blocks_for(positions(n, y)), kThreads, 0, stream>>>(f, n, Rows<const T>(x),
                                                                       Rows<T>(y));
    return 0;
  });
  return cudaGetLastError();
}

template <class F>
cudaError_t bwd(F f, Elem e, uint64_t n, FeatureView saved, FeatureView dy, FeatureView dx,
                bool accumulate, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const bool vectorised = launch_vectors<T>(
        n, {&saved, &dy, &dx}, [&](unsigned blocks, uint64_t vectors, bool small) {
          const auto* sp = static_cast<const T*>(saved.data);
          const auto* gp = static_cast<const T*>(dy.data);
          auto* dp = static_cast<T*>(dx.data);
          if (small)
            bwd_vec_kernel<<<blocks, kThreads, 0, stream>>>(f, static_cast<uint32_t>(vectors), sp,
                                                            gp, dp, accumulate);
          else
            bwd_vec_kernel<<<blocks, kThreads, 0, stream>>>(f, vectors, sp, gp, dp, accumulate);
        });
    if (!vectorised)
      bwd_kernel<<<blocks_for(positions(n, dx)), kThreads, 0, stream>>>(
          f, n, Rows<const T>(saved), Rows<const T>(dy), Rows<T>(dx), accumulate);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_relu_fwd(Elem e, uint64_t n, FeatureView x, FeatureView y, cudaStream_t stream) {
  return fwd(Relu{}, e, n, x, y, stream);
}

cudaError_t launch_relu_bwd(Elem e, uint64_t n, FeatureView saved, FeatureView dy, FeatureView dx,
                            bool accumulate, cudaStream_t stream) {
  return bwd(Relu{}, e, n, saved, dy, dx, accumulate, stream);
}

cudaError_t launch_activation_fwd(Activation f, float slope, Elem e, uint64_t n, FeatureView x,
                                  FeatureView y, cudaStream_t stream) {
  switch (f) {
    case Activation::TANH:
      return fwd(Tanh{}, e, n, x, y, stream);
    case Activation::SILU:
      return fwd(Silu{}, e, n, x, y, stream);
    case Activation::RELU6:
      return fwd(Relu6{}, e, n, x, y, stream);
    case Activation::LEAKY_RELU:
      return fwd(LeakyRelu{slope}, e, n, x, y, stream);
    case Activation::GELU:
      return fwd(Gelu{}, e, n, x, y, stream);
    case Activation::SIGMOID:
      return fwd(Sigmoid{}, e, n, x, y, stream);
    case Activation::NUM_ACTIVATIONS:
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_activation_bwd(Activation f, float slope, Elem e, uint64_t n, FeatureView saved,
                                  FeatureView dy, FeatureView dx, bool accumulate,
                                  cudaStream_t stream) {
  switch (f) {
    case Activation::TANH:
      return bwd(Tanh{}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::SILU:
      return bwd(Silu{}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::RELU6:
      return bwd(Relu6{}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::LEAKY_RELU:
      return bwd(LeakyRelu{slope}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::GELU:
      return bwd(Gelu{}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::SIGMOID:
      return bwd(Sigmoid{}, e, n, saved, dy, dx, accumulate, stream);
    case Activation::NUM_ACTIVATIONS:
      break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t launch_concat_fwd(Elem e, uint64_t rows, const ConcatParts& x, FeatureView y,
                              cudaStream_t stream) {
  if (rows == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const uint64_t n = rows * static_cast<uint64_t>(y.stride);
    bool whole = y.stride % kVec<T> == 0 && vectorisable<T>(n, {y.data});
    for (int q = 0; q < x.count; ++q) {
      const FeatureView& p = x.part[q];
      whole = whole && p.cols % kVec<T> == 0 && p.stride % kVec<T> == 0 &&
              vectorisable<T>(rows * static_cast<uint64_t>(p.stride), {p.data});
    }
    if (!whole)
      concat_fwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(rows, x, Rows<T>(y));
    else if (small_index(n))
      concat_fwd_vec_kernel<<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(
          static_cast<uint32_t>(rows), x, Rows<T>(y));
    else
      concat_fwd_vec_kernel<<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(rows, x, Rows<T>(y));
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_concat_bwd(Elem e, uint64_t rows, FeatureView dy, const ConcatSlices& slices,
                              FeatureView dx, bool accumulate, cudaStream_t stream) {
  if (rows == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const uint64_t n = rows * static_cast<uint64_t>(dx.stride);
    const uint64_t dy_n = rows * static_cast<uint64_t>(dy.stride);
    bool whole = dx.cols % kVec<T> == 0 && dx.stride % kVec<T> == 0 && dy.stride % kVec<T> == 0 &&
                 vectorisable<T>(n, {dx.data}) && vectorisable<T>(dy_n, {dy.data});
    for (int s = 0; s < slices.count; ++s) whole = whole && slices.from[s] % kVec<T> == 0;
    if (!whole)
      concat_bwd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(rows, Rows<const T>(dy), slices,
                                                                Rows<T>(dx), accumulate);
    else if (small_index(n) && small_index(dy_n))
      concat_bwd_vec_kernel<<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(
          static_cast<uint32_t>(rows), Rows<const T>(dy), slices, Rows<T>(dx), accumulate);
    else
      concat_bwd_vec_kernel<<<blocks_for(n / kVec<T>), kThreads, 0, stream>>>(
          rows, Rows<const T>(dy), slices, Rows<T>(dx), accumulate);
    return 0;
  });
  return cudaGetLastError();
}

namespace {

cudaError_t sum(Elem e, uint64_t n, FeatureView a, const FeatureView* b, FeatureView y,
                bool accumulate, bool relu, cudaStream_t stream) {
  if (n == 0) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const bool vectorised =
        launch_vectors<T>(n, {&a, b, &y}, [&](unsigned blocks, uint64_t vectors, bool small) {
          const auto* ap = static_cast<const T*>(a.data);
          const auto* bp = b ? static_cast<const T*>(b->data) : nullptr;
          auto* yp = static_cast<T*>(y.data);
          if (small)
            sum_vec_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint32_t>(vectors), ap, bp,
                                                            yp, accumulate, relu);
          else
            sum_vec_kernel<<<blocks, kThreads, 0, stream>>>(vectors, ap, bp, yp, accumulate, relu);
        });
    if (!vectorised)
      sum_kernel<<<blocks_for(positions(n, y)), kThreads, 0, stream>>>(
          n, Rows<const T>(a), Rows<const T>(b ? *b : a), b != nullptr, Rows<T>(y), accumulate,
          relu);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_sum(Elem e, uint64_t n, FeatureView a, const FeatureView* b, FeatureView y,
                       bool accumulate, cudaStream_t stream) {
  return sum(e, n, a, b, y, accumulate, false, stream);
}

cudaError_t launch_add_relu_fwd(Elem e, uint64_t n, FeatureView x0, FeatureView x1, FeatureView y,
                                cudaStream_t stream) {
  return sum(e, n, x0, &x1, y, false, true, stream);
}

cudaError_t launch_add_relu_bwd(Elem e, uint64_t n, FeatureView y, FeatureView dy, FeatureView dx0,
                                FeatureView dx1, AddReluOutputs o, cudaStream_t stream) {
  if (n == 0 || !(o.has0 || o.has1)) return cudaGetLastError();
  dispatch(e, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    add_relu_bwd_kernel<<<blocks_for(positions(n, o.has0 ? dx0 : dx1)), kThreads, 0, stream>>>(
        n, Rows<const T>(y), Rows<const T>(dy), Rows<T>(o.has0 ? dx0 : dx1),
        Rows<T>(o.has1 ? dx1 : dx0), o);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace tr::cuda

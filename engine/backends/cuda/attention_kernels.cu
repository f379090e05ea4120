// SPDX-License-Identifier: GPL-3.0-or-later
// A thread per (sample, head, token): its head's accumulators in registers
// or local memory, the keys and values read as they come. Each output is
// computed by one thread in a fixed order, so runs repeat bit for bit.
#include "backends/cuda/attention_kernels.h"
#include "backends/cuda/half_io.cuh"
#include "backends/cuda/launch_config.cuh"
#include "backends/cuda/training_step.cuh"
#include "core/attention_dropout.h"

namespace tr::cuda {

namespace {

struct Unit {
  int64_t n, h, token;
};

__device__ inline Unit unit_of(const AttentionShape& s, int64_t u) {
  return {u / (s.heads * s.tokens), (u / s.tokens) % s.heads, u % s.tokens};
}

// Offsets of a token's query head in qkv and of its head in o.
__device__ inline int64_t qkv_at(const AttentionShape& s, int64_t n, int64_t token, int64_t h,
                                 int64_t d) {
  return (n * s.tokens + token) * s.qkv_stride + h * d;
}
__device__ inline int64_t o_at(const AttentionShape& s, int64_t n, int64_t token, int64_t h,
                               int64_t d) {
  return (n * s.tokens + token) * s.o_stride + h * d;
}

// The pair's mask key (0 without dropout) and query i's factor for key j.
__device__ inline uint32_t drop_key(const AttentionShape& s, const AttentionDropout& drop,
                                    const Unit& un) {
  if (!drop.draw.on) return 0;
  const auto pair = static_cast<uint64_t>((drop.first_sample + un.n) * s.heads + un.h);
  return attention_dropout_key(drop.draw.seed, step_of(drop.step), drop.draw.layer, pair);
}
__device__ inline float keep_factor(const AttentionShape& s, const AttentionDropout& drop,
                                    uint32_t key, int64_t i, int64_t j) {
  if (!drop.draw.on) return 1.0f;
  const auto index = static_cast<uint32_t>(i * s.tokens + j);
  return attention_dropout_draw(key, index) >= drop.draw.threshold ? drop.draw.scale : 0.0f;
}

template <class T>
__device__ inline float dot(const T* a, const T* b, int64_t d) {
  float acc = 0.0f;
  for (int64_t c = 0; c < d; ++c) acc = fmaf(load(a, c), load(b, c), acc);
  return acc;
}

template <class T>
__global__ void attention_fwd_kernel(AttentionShape s, const T* qkv, T* o, float* lse,
                                     AttentionDropout drop) {
  const int64_t d = s.channels / s.heads, units = s.n * s.heads * s.tokens;
  const float scale = rsqrtf(static_cast<float>(d));
  float acc[kAttentionMaxHeadDim];
  for (int64_t u = static_cast<int64_t>(first_index()); u < units;
       u += static_cast<int64_t>(grid_stride())) {
    const Unit un = unit_of(s, u);
    const T* q = qkv + qkv_at(s, un.n, un.token, un.h, d);
    const uint32_t key = drop_key(s, drop, un);
    for (int64_t c = 0; c < d; ++c) acc[c] = 0.0f;
    float m = -__int_as_float(0x7f800000), l = 0.0f;
    for (int64_t j = 0; j < s.tokens; ++j) {
      const T* k = qkv + qkv_at(s, un.n, j, un.h, d) + s.channels;
      const float score = dot(q, k, d) * scale;
      if (score > m) {
        const float correction = expf(m - score);
        l *= correction;
        for (int64_t c = 0; c < d; ++c) acc[c] *= correction;
        m = score;
      }
      const float p = expf(score - m);
      l += p;
      const float kept = p * keep_factor(s, drop, key, un.token, j);
      const T* v = k + s.channels;
      for (int64_t c = 0; c < d; ++c) acc[c] = fmaf(kept, load(v, c), acc[c]);
    }
    T* out = o + o_at(s, un.n, un.token, un.h, d);
    for (int64_t c = 0; c < d; ++c) store(out, c, acc[c] / l);
    // The row's padding lanes, once a row.
    if (un.h == 0)
      for (int64_t c = s.channels; c < s.o_stride; ++c)
        store(o + o_at(s, un.n, un.token, 0, d), c, 0.0f);
    if (lse) lse[(un.n * s.tokens + un.token) * s.heads + un.h] = m + logf(l);
  }
}

template <class T>
__global__ void attention_delta_kernel(AttentionShape s, const T* o, const T* dout, float* delta) {
  const int64_t d = s.channels / s.heads, units = s.n * s.heads * s.tokens;
  for (int64_t u = static_cast<int64_t>(first_index()); u < units;
       u += static_cast<int64_t>(grid_stride())) {
    const Unit un = unit_of(s, u);
    const int64_t at = o_at(s, un.n, un.token, un.h, d);
    delta[u] = dot(dout + at, o + at, d);
  }
}

template <class T>
__device__ inline void write_row(T* out, const float* v, int64_t d, float factor, bool accumulate) {
  for (int64_t c = 0; c < d; ++c) {
    const float x = v[c] * factor;
    store(out, c, accumulate ? load(out, c) + x : x);
  }
}

// dq_i = scale * sum_j p_ij (f_ij do_i . v_j - delta_i) k_j, f the keep factor
template <class T>
__global__ void attention_dq_kernel(AttentionShape s, const T* qkv, const float* lse, const T* dout,
                                    const float* delta, T* dqkv, bool accumulate,
                                    AttentionDropout drop) {
  const int64_t d = s.channels / s.heads, units = s.n * s.heads * s.tokens;
  const float scale = rsqrtf(static_cast<float>(d));
  float dq[kAttentionMaxHeadDim];
  for (int64_t u = static_cast<int64_t>(first_index()); u < units;
       u += static_cast<int64_t>(grid_stride())) {
    const Unit un = unit_of(s, u);
    const T* q = qkv + qkv_at(s, un.n, un.token, un.h, d);
    const T* doi = dout + o_at(s, un.n, un.token, un.h, d);
    const float l = lse[(un.n * s.tokens + un.token) * s.heads + un.h], di = delta[u];
    const uint32_t key = drop_key(s, drop, un);
    for (int64_t c = 0; c < d; ++c) dq[c] = 0.0f;
    for (int64_t j = 0; j < s.tokens; ++j) {
      const T* k = qkv + qkv_at(s, un.n, j, un.h, d) + s.channels;
      const float p = expf(dot(q, k, d) * scale - l);
      const float f = keep_factor(s, drop, key, un.token, j);
      const float ds = p * (f * dot(doi, k + s.channels, d) - di);
      for (int64_t c = 0; c < d; ++c) dq[c] = fmaf(ds, load(k, c), dq[c]);
    }
    write_row(dqkv + qkv_at(s, un.n, un.token, un.h, d), dq, d, scale, accumulate);
    if (un.h == 0)
      for (int64_t c = 3 * s.channels; c < s.qkv_stride; ++c)
        store(dqkv + qkv_at(s, un.n, un.token, 0, d), c, 0.0f);
  }
}

// dk_j = scale * sum_i p_ij (f_ij do_i . v_j - delta_i) q_i, dv_j = sum_i p_ij f_ij do_i
template <class T>
__global__ void attention_dkv_kernel(AttentionShape s, const T* qkv, const float* lse,
                                     const T* dout, const float* delta, T* dqkv, bool accumulate,
                                     AttentionDropout drop) {
  const int64_t d = s.channels / s.heads, units = s.n * s.heads * s.tokens;
  const float scale = rsqrtf(static_cast<float>(d));
  float dk[kAttentionMaxHeadDim], dv[kAttentionMaxHeadDim];
  for (int64_t u = static_cast<int64_t>(first_index()); u < units;
       u += static_cast<int64_t>(grid_stride())) {
    const Unit un = unit_of(s, u);
    const T* k = qkv + qkv_at(s, un.n, un.token, un.h, d) + s.channels;
    const T* v = k + s.channels;
    const uint32_t key = drop_key(s, drop, un);  // the pair's: every query's row of it
    for (int64_t c = 0; c < d; ++c) dk[c] = dv[c] = 0.0f;
    for (int64_t i = 0; i < s.tokens; ++i) {
      const T* q = qkv + qkv_at(s, un.n, i, un.h, d);
      const T* doi = dout + o_at(s, un.n, i, un.h, d);
      const int64_t row = (un.n * s.heads + un.h) * s.tokens + i;
      const float p = expf(dot(q, k, d) * scale - lse[(un.n * s.tokens + i) * s.heads + un.h]);
      const float f = keep_factor(s, drop, key, i, un.token);
      const float ds = p * (f * dot(doi, v, d) - delta[row]);
      const float kept = p * f;
      for (int64_t c = 0; c < d; ++c) {
        dk[c] = fmaf(ds, load(q, c), dk[c]);
        dv[c] = fmaf(kept, load(doi, c), dv[c]);
      }
    }
    T* base = dqkv + qkv_at(s, un.n, un.token, un.h, d);
    write_row(base + s.channels, dk, d, scale, accumulate);
    write_row(base + 2 * s.channels, dv, d, 1.0f, accumulate);
  }
}

uint64_t units_of(const AttentionShape& s) {
  return static_cast<uint64_t>(s.n * s.heads * s.tokens);
}

}  // namespace

uint64_t attention_workspace_bytes(const AttentionShape& s) {
  return units_of(s) * sizeof(float);
}

cudaError_t launch_attention_fwd(const AttentionShape& s, const void* qkv, void* o, float* lse,
                                 const AttentionDropout& drop, cudaStream_t stream) {
  if (units_of(s) == 0) return cudaGetLastError();
  dispatch(s.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    attention_fwd_kernel<<<blocks_for(units_of(s)), kThreads, 0, stream>>>(
        s, static_cast<const T*>(qkv), static_cast<T*>(o), lse, drop);
    return 0;
  });
  return cudaGetLastError();
}

cudaError_t launch_attention_bwd(const AttentionShape& s, const void* qkv, const void* o,
                                 const float* lse, const void* dout, void* dqkv, bool accumulate,
                                 const AttentionDropout& drop, void* workspace,
                                 cudaStream_t stream) {
  if (units_of(s) == 0) return cudaGetLastError();
  auto* delta = static_cast<float*>(workspace);
  dispatch(s.elem, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const auto* x = static_cast<const T*>(qkv);
    const auto* dy = static_cast<const T*>(dout);
    auto* dx = static_cast<T*>(dqkv);
    const unsigned blocks = blocks_for(units_of(s));
    attention_delta_kernel<<<blocks, kThreads, 0, stream>>>(s, static_cast<const T*>(o), dy, delta);
    attention_dq_kernel<<<blocks, kThreads, 0, stream>>>(s, x, lse, dy, delta, dx, accumulate,
                                                         drop);
    attention_dkv_kernel<<<blocks, kThreads, 0, stream>>>(s, x, lse, dy, delta, dx, accumulate,
                                                          drop);
    return 0;
  });
  return cudaGetLastError();
}

}  // namespace tr::cuda

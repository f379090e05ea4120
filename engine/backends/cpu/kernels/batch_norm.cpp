// SPDX-License-Identifier: GPL-3.0-or-later
// Batch normalisation on the CPU, matching torch.nn.BatchNorm2d.
#include "backends/cpu/kernels/batch_norm.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/kernel_util.h"

namespace tr::cpu {

using detail::has_out;
using detail::kChannelBlock;
using detail::layer_params;

// Per-channel sums run over channel blocks with rows inner: the row slice of
// a block is contiguous, so the inner loop vectorises across channels, and
// double accumulators keep large batches (N*H*W in the 10^5) accurate.

void bn_fwd_train(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  const float* gamma = a.in[1].f32();
  const float* beta = a.in[2].f32();
  const float* prev_mean = a.in[3].f32();
  const float* prev_var = a.in[4].f32();
  float* y = a.out[0].f32();
  float* saved = a.out[1].f32();
  float* next_mean = a.out[2].f32();
  float* next_var = a.out[3].f32();
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  const LayerParams& pr = layer_params(a);
  const double eps = pr.eps;
  const double momentum = pr.momentum;

  for (int64_t c0 = 0; c0 < C; c0 += kChannelBlock) {
    const int64_t cb = std::min(kChannelBlock, C - c0);
    double sum[kChannelBlock] = {};
    for (int64_t m = 0; m < M; ++m) {
      const float* row = x + m * C + c0;
      for (int64_t c = 0; c < cb; ++c) sum[c] += row[c];
    }
    float mean[kChannelBlock];
    for (int64_t c = 0; c < cb; ++c) mean[c] = static_cast<float>(sum[c] / static_cast<double>(M));
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    double sq[kChannelBlock] = {};
    for (int64_t m = 0; m < M; ++m) {
      const float* row = x + m * C + c0;
      for (int64_t c = 0; c < cb; ++c) {
        const double d = row[c] - mean[c];
        sq[c] += d * d;
      }
    }
    float scale[kChannelBlock], shift[kChannelBlock];  // y = (x - mean) * scale + shift
    for (int64_t c = 0; c < cb; ++c) {
      const int64_t ch = c0 + c;
      const double var = sq[c] / static_cast<double>(M);
      // As in PyTorch: the biased variance normalises, the unbiased one feeds
      // the running estimate. PyTorch refuses a single value per channel;
      // here the biased variance stands in rather than dividing by zero.
      const double unbiased = M > 1 ? sq[c] / static_cast<double>(M - 1) : var;
      const double inv_std = 1.0 / std::sqrt(var + eps);
      saved[ch] = mean[c];
      saved[C + ch] = static_cast<float>(inv_std);
      next_mean[ch] = static_cast<float>((1.0 - momentum) * prev_mean[ch] + momentum * mean[c]);
      next_var[ch] = static_cast<float>((1.0 - momentum) * prev_var[ch] + momentum * unbiased);
      scale[c] = static_cast<float>(gamma[ch] * inv_std);
      shift[c] = beta[ch];
    }
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x + m * C + c0;
      float* yr = y + m * C + c0;
      for (int64_t c = 0; c < cb; ++c) yr[c] = (xr[c] - mean[c]) * scale[c] + shift[c];
    }
  }
}

void bn_fwd_infer(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  const float* scale = a.in[1].f32();
  const float* bias = a.in[2].f32();
  float* y = a.out[0].f32();
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * C;
    float* yr = y + m * C;
    for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * scale[c] + bias[c];
  }
}

void bn_bwd(const KernelArgs& a) {
  const float* x = a.in[0].f32();
  const float* gamma = a.in[1].f32();
  const float* saved = a.in[2].f32();
  const float* dy = a.in[3].f32();
  const Shape& s = a.in[0].shape();
  const int64_t C = s.c;
  const int64_t M = s.n * s.h * s.w;
  const double inv_m = 1.0 / static_cast<double>(M);
  const bool want_dx = has_out(a, 2);
  const bool acc_dx = a.accumulate(2);

  for (int64_t c0 = 0; c0 < C; c0 += kChannelBlock) {
    const int64_t cb = std::min(kChannelBlock, C - c0);
    const float* mean = saved + c0;
    const float* inv_std = saved + C + c0;
    double sdy[kChannelBlock] = {}, sdyx[kChannelBlock] = {};
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x + m * C + c0;
      const float* gr = dy + m * C + c0;
      for (int64_t c = 0; c < cb; ++c) {
        sdy[c] += gr[c];
        sdyx[c] += static_cast<double>(gr[c]) * (xr[c] - mean[c]);
      }
    }
    // dx = gamma*inv_std * (dy - mean(dy) - xhat * mean(dy*xhat)), folded
    // into dx = k_dy*dy + k_x*(x - mean) + k_0 per channel; x - mean stays
    // explicit so a large mean does not cancel in float.
    float k_dy[kChannelBlock], k_x[kChannelBlock], k_0[kChannelBlock];
    for (int64_t c = 0; c < cb; ++c) {
      const int64_t ch = c0 + c;
      const double dbeta = sdy[c];
      const double dgamma = sdyx[c] * inv_std[c];
      if (has_out(a, 0)) {
        float* g = a.out[0].f32() + ch;
        *g = static_cast<float>(a.accumulate(0) ? *g + dgamma : dgamma);
      }
      if (has_out(a, 1)) {
        float* g = a.out[1].f32() + ch;
        *g = static_cast<float>(a.accumulate(1) ? *g + dbeta : dbeta);
      }
      const double k = static_cast<double>(gamma[ch]) * inv_std[c];
      const double kx = -k * inv_std[c] * dgamma * inv_m;
      k_dy[c] = static_cast<float>(k);
      k_x[c] = static_cast<float>(kx);
      k_0[c] = static_cast<float>(-k * dbeta * inv_m);
    }
    if (!want_dx) continue;
    float* dx = a.out[2].f32();
    for (int64_t m = 0; m < M; ++m) {
      const float* xr = x + m * C + c0;
      const float* gr = dy + m * C + c0;
      float* o = dx + m * C + c0;
      if (acc_dx) {
        for (int64_t c = 0; c < cb; ++c)
          o[c] += k_dy[c] * gr[c] + k_x[c] * (xr[c] - mean[c]) + k_0[c];
      } else {
        for (int64_t c = 0; c < cb; ++c)
          o[c] = k_dy[c] * gr[c] + k_x[c] * (xr[c] - mean[c]) + k_0[c];
      }
    }
  }
}

}  // namespace tr::cpu

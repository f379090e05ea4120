// SPDX-License-Identifier: GPL-3.0-or-later
// Softmax cross-entropy on the CPU, matching torch.nn.CrossEntropyLoss (mean reduction).
//
// The result block holds sums, not means, so that batches and ranks add up.
#include "backends/cpu/kernels/softmax_ce.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::for_each_part;
using detail::has_out;
using detail::kMaxParts;
using detail::reduction_parts;

namespace {

// The sums of one part of the rows.
struct Tally {
  double loss = 0.0;
  int64_t top1 = 0, top5 = 0;
};

// exp and log per logit cost far more than streaming it.
constexpr int64_t kLogitCost = 16;

void softmax_ce(const KernelArgs& a, bool backward) {
  const Shape& s = a.in[0].shape();
  const float* logits = a.in[0].f32();
  const int32_t* labels = a.in[1].i32();
  const int64_t N = s.n;
  const int64_t K = s.per_sample();
  float* grad = backward && has_out(a, 1) ? a.out[1].f32() : nullptr;
  const bool acc = a.accumulate(1);
  // Under AMP the gradient is of the loss times the loss scale, so that small
  // FP16 gradients downstream stay above the subnormals; the FP32 gradients
  // are divided by it again before the update. Exactly 1 / N otherwise, N
  // being the samples of the rank's tensor-parallel group (loss_group).
  const bool amp = a.constants().amp() && a.scalars;
  const float inv_n = (1.0f / static_cast<float>(N * a.constants().loss_group)) *
                      (amp ? a.scalar(ScalarSlot::LOSS_SCALE) : 1.0f);

  // Rows in parts (see parallel.h); the losses add up in part order, so
  // the bits do not depend on the threads. Counts are exact in any order.
  const int parts = reduction_parts(N, N * K * kLogitCost);
  Tally tally[kMaxParts];
  for_each_part(N, parts, [&](int p, int64_t lo, int64_t hi) {
    Tally& t = tally[p];
    for (int64_t i = lo; i < hi; ++i) {
      const float* row = logits + i * K;
      float* g = grad ? grad + i * K : nullptr;
      const int32_t label = labels[i];
      if (label < 0 || label >= K) {
        // A broken label must stop the step, not read out of bounds: NaN in
        // the result block trips the NaN check. Its gradient row stays zero.
        t.loss = std::numeric_limits<double>::quiet_NaN();
        if (g && !acc) std::memset(g, 0, static_cast<size_t>(K) * sizeof(float));
        continue;
      }
      float mx = row[0];
      for (int64_t k = 1; k < K; ++k) mx = row[k] > mx ? row[k] : mx;
      double sum = 0.0;
      for (int64_t k = 0; k < K; ++k) sum += std::exp(static_cast<double>(row[k] - mx));
      t.loss += static_cast<double>(mx) + std::log(sum) - static_cast<double>(row[label]);

      // Ties favour the label: it is within top-k unless k logits beat it strictly.
      const float target = row[label];
      int64_t greater = 0;
      for (int64_t k = 0; k < K; ++k) greater += row[k] > target ? 1 : 0;
      t.top1 += greater < 1 ? 1 : 0;
      t.top5 += greater < 5 ? 1 : 0;

      if (g) {
        const float inv_sum = static_cast<float>(1.0 / sum);
        for (int64_t k = 0; k < K; ++k) {
          const float d = (std::exp(row[k] - mx) * inv_sum - (k == label ? 1.0f : 0.0f)) * inv_n;
          g[k] = acc ? g[k] + d : d;
        }
      }
    }
  });
  double loss = 0.0;
  int64_t top1 = 0, top5 = 0;
  for (int p = 0; p < parts; ++p) {
    loss += tally[p].loss;
    top1 += tally[p].top1;
    top5 += tally[p].top5;
  }
  float* result = a.out[0].f32();
  result[0] = static_cast<float>(loss);
  result[1] = static_cast<float>(top1);
  result[2] = static_cast<float>(top5);
  result[3] = static_cast<float>(N);

  // Evaluation: count (true label, predicted class) pairs into the confusion
  // block, adding to the counts of the batches before. A separate serial pass:
  // the counts are shared by all rows, and a row's argmax is K compares.
  if (!backward && has_out(a, 1)) {
    float* confusion = a.out[1].f32();
    if (!a.accumulate(1)) std::memset(confusion, 0, static_cast<size_t>(K * K) * sizeof(float));
    for (int64_t i = 0; i < N; ++i) {
      const int32_t label = labels[i];
      if (label < 0 || label >= K) continue;  // already reported through the NaN loss
      // As for top-1, a tie with the label counts as the label.
      const float* row = logits + i * K;
      int64_t best = label;
      for (int64_t k = 0; k < K; ++k) best = row[k] > row[best] ? k : best;
      confusion[label * K + best] += 1.0f;
    }
  }
}

}  // namespace

void softmax_ce_fwd_bwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, softmax_ce_fwd_bwd)) return;
  softmax_ce(a, true);
}

void softmax_ce_fwd(const KernelArgs& a) {
  if (detail::run_16bit_staged(a, softmax_ce_fwd)) return;
  softmax_ce(a, false);
}

}  // namespace tr::cpu

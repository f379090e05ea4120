// SPDX-License-Identifier: GPL-3.0-or-later
// CPU optimizer kernels, matching torch.optim.SGD/Adam and LARS as apex LARC over SGD.
//
// Weight decay is L2 added to the gradient (torch's default). The LARS trust
// ratio scales the decayed gradient before the momentum buffer, as LARC does,
// because that is the LARS most PyTorch curves were trained with.
#include "backends/cpu/kernels/optimizers.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "backends/cpu/kernels/parallel.h"
#include "runtime/lars_operands.h"

namespace tr::cpu {

using detail::for_each_part;
using detail::kMaxParts;
using detail::parallel_floats;
using detail::reduction_parts;

namespace {

const OptimizerSpec& optimizer_of(const KernelArgs& a) {
  return a.constants().optimizer;
}

bool overflowed(const KernelArgs& a) {
  return a.scalar(ScalarSlot::OVERFLOW) != 0.0f;
}

bool first_step(const KernelArgs& a) {
  return a.scalar(ScalarSlot::UPDATES) <= 1.0f;
}

uint64_t span_floats(const KernelArgs& a) {
  uint64_t n = a.in_spans[0].floats();
  for (const SpanArg& s : a.in_spans) n = std::min(n, s.floats());
  for (const SpanArg& s : a.out_spans) n = std::min(n, s.floats());
  return n;
}

// One SGD step over n elements with momentum buffer m (null: no momentum);
// `rate` scales the decayed gradient before it enters the buffer (LARS trust
// ratio, 1 for plain SGD).
void sgd_range(float* w, const float* g, float* m, int64_t n, float lr, float rate, float momentum,
               float wd, bool nesterov, bool first) {
  if (!m) {
    for (int64_t i = 0; i < n; ++i) w[i] -= lr * rate * (g[i] + wd * w[i]);
    return;
  }
  // torch: the buffer starts as the first gradient (no dampening).
  const float keep = first ? 0.0f : momentum;
  if (nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      const float d = rate * (g[i] + wd * w[i]);
      const float mi = keep * m[i] + d;
      m[i] = mi;
      w[i] -= lr * (d + momentum * mi);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float mi = keep * m[i] + rate * (g[i] + wd * w[i]);
      m[i] = mi;
      w[i] -= lr * mi;
    }
  }
}

// Each element updates on its own, so the threads split the range freely;
// the constants travel by value, out of reach of the stores. The cost
// counts the floats each element reads and writes.
void sgd(float* w, const float* g, float* m, uint64_t n, float lr, float rate, float momentum,
         float wd, bool nesterov, bool first) {
  parallel_floats(
      static_cast<int64_t>(n),
      [=](int64_t lo, int64_t hi) {
        sgd_range(w + lo, g + lo, m ? m + lo : nullptr, hi - lo, lr, rate, momentum, wd, nesterov,
                  first);
      },
      m ? 5 : 3);
}

void adam_range(float* w, const float* g, float* m, float* v, int64_t n, float b1, float b2,
                float c1, float c2, float wd, float eps, float step_size, float inv_sqrt_corr2) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + wd * w[i];
    const float mi = b1 * m[i] + c1 * gi;
    const float vi = b2 * v[i] + c2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= step_size * mi / (std::sqrt(vi) * inv_sqrt_corr2 + eps);
  }
}

}  // namespace

void sgd_update(const KernelArgs& a) {
  if (overflowed(a)) return;
  const OptimizerSpec& o = optimizer_of(a);
  const bool has_m = a.in_spans.size() > 2 && a.out_spans.size() > 1;
  sgd(a.out_spans[0].f32(), a.in_spans[1].f32(), has_m ? a.out_spans[1].f32() : nullptr,
      span_floats(a), a.scalar(ScalarSlot::LR), 1.0f, static_cast<float>(o.momentum),
      static_cast<float>(o.weight_decay), o.nesterov, first_step(a));
}

void adam_update(const KernelArgs& a) {
  if (overflowed(a)) return;
  const OptimizerSpec& o = optimizer_of(a);
  float* w = a.out_spans[0].f32();
  const float* g = a.in_spans[1].f32();
  float* m = a.out_spans[1].f32();
  float* v = a.out_spans[2].f32();
  const uint64_t n = span_floats(a);
  // 1 - beta in double first: 1.0f - 0.999f is off by 1e-5 relative.
  const float b1 = static_cast<float>(o.beta1), b2 = static_cast<float>(o.beta2);
  const float c1 = static_cast<float>(1.0 - o.beta1), c2 = static_cast<float>(1.0 - o.beta2);
  const float wd = static_cast<float>(o.weight_decay);
  const float eps = static_cast<float>(o.adam_eps);
  // torch: step_size = lr / corr1, denom = sqrt(v) / sqrt(corr2) + eps.
  const float step_size = a.scalar(ScalarSlot::LR) / a.scalar(ScalarSlot::ADAM_CORR1);
  const float inv_sqrt_corr2 = 1.0f / std::sqrt(a.scalar(ScalarSlot::ADAM_CORR2));
  parallel_floats(
      static_cast<int64_t>(n),
      [=](int64_t lo, int64_t hi) {
        adam_range(w + lo, g + lo, m + lo, v + lo, hi - lo, b1, b2, c1, c2, wd, eps, step_size,
                   inv_sqrt_corr2);
      },
      8);
}

void lars_norms(const KernelArgs& a) {
  const bool squares = a.node && a.node->data_sharded;
  const SpanArg& ws = a.in_spans[0];
  const SpanArg& gs = a.in_spans[1];
  const SpanArg& ns = a.out_spans[0];
  for (const LarsOperand& t : lars_operands(ws, gs, nullptr, ns)) {
    if (!t.norms) continue;
    const float* w = t.w;
    const float* g = t.g;
    const int64_t n = t.n;
    // Parts summed in part order (see parallel.h): the same bits on any thread count.
    const int parts = reduction_parts(n, 2 * n);
    double part_w[kMaxParts], part_g[kMaxParts];
    for_each_part(n, parts, [&](int p, int64_t lo, int64_t hi) {
      double pw = 0.0, pg = 0.0;
      for (int64_t i = lo; i < hi; ++i) {
        pw += static_cast<double>(w[i]) * w[i];
        pg += static_cast<double>(g[i]) * g[i];
      }
      part_w[p] = pw;
      part_g[p] = pg;
    });
    double sw = 0.0, sg = 0.0;
    for (int p = 0; p < parts; ++p) {
      sw += part_w[p];
      sg += part_g[p];
    }
    float* out = t.norms;
    if (squares) {  // this rank's part of the sum LARS_NORM_SUM completes
      out[0] += static_cast<float>(sw);
      out[1] += static_cast<float>(sg);
      continue;
    }
    out[0] = static_cast<float>(std::sqrt(sw));
    out[1] = static_cast<float>(std::sqrt(sg));
  }
}

void lars_update(const KernelArgs& a) {
  if (overflowed(a)) return;
  const OptimizerSpec& o = optimizer_of(a);
  const SpanArg& ws = a.out_spans[0];
  const SpanArg& gs = a.in_spans[1];
  const SpanArg& ms = a.out_spans[1];
  const SpanArg& ns = a.in_spans[3];
  const float lr = a.scalar(ScalarSlot::LR);
  const float momentum = static_cast<float>(o.momentum);
  const float wd = static_cast<float>(o.weight_decay);
  const bool first = first_step(a);
  for (const LarsOperand& t : lars_operands(ws, gs, &ms, ns)) {
    float rate = 1.0f;
    if (t.norms) {
      const double wn = t.norms[0], gn = t.norms[1];
      if (wn > 0.0 && gn > 0.0)
        rate = static_cast<float>(o.trust_coefficient * wn / (gn + o.weight_decay * wn));
    }
    sgd(t.w, t.g, t.m, static_cast<uint64_t>(t.n), lr, rate, momentum, wd, false, first);
  }
}

void loss_scale_update(const KernelArgs& a) {
  float* s = a.scalars;
  float& scale = s[static_cast<int>(ScalarSlot::LOSS_SCALE)];
  float& clean = s[static_cast<int>(ScalarSlot::CLEAN_STEPS)];
  if (overflowed(a)) {
    scale = std::max(1.0f, scale * 0.5f);
    clean = 0.0f;
  } else {
    clean += 1.0f;
    if (clean >= static_cast<float>(kLossScaleGrowthInterval)) {
      scale *= 2.0f;
      clean = 0.0f;
    }
  }
  s[static_cast<int>(ScalarSlot::INV_LOSS_SCALE)] = 1.0f / scale;
}

void adam_bias_correction(const KernelArgs& a) {
  const OptimizerSpec& o = optimizer_of(a);
  // An overflowed step has not counted (and its update is skipped anyway).
  const double t = std::max(1.0, static_cast<double>(a.scalar(ScalarSlot::UPDATES)));
  a.scalars[static_cast<int>(ScalarSlot::ADAM_CORR1)] =
      static_cast<float>(1.0 - std::pow(o.beta1, t));
  a.scalars[static_cast<int>(ScalarSlot::ADAM_CORR2)] =
      static_cast<float>(1.0 - std::pow(o.beta2, t));
}

void count_update(const KernelArgs& a) {
  if (!overflowed(a)) a.scalars[static_cast<int>(ScalarSlot::UPDATES)] += 1.0f;
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Rows are independent, so they are split over the threads as they come;
// the parameter gradients sum over every row, in a fixed number of parts
// whose partials are combined in part order (parallel.h), so no result
// depends on the thread count. A row's statistics are summed in double about
// its first value (one read of the row, into 8 lanes combined in a fixed
// order), its normalisation is a second pass while the row is still in L1.
#include "backends/cpu/kernels/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/norm_part_sums.h"
#include "backends/cpu/kernels/parallel.h"

namespace tr::cpu {

using detail::for_each_part;
using detail::has_out;
using detail::parallel_ranges;
using detail::reduction_parts;

namespace {

struct RowStats {
  float mean, inv_std;
};

// Row sums go into kSumLanes partial sums (element i into lane i mod kSumLanes),
// which vectorise where one running sum would wait on each add's latency.
constexpr int64_t kSumLanes = 8;

// The lanes combined pairwise, halves first: a fixed order. Overwrites `v`.
double combine_lanes(double* v) {
  for (int64_t half = kSumLanes / 2; half > 0; half /= 2)
    for (int64_t k = 0; k < half; ++k) v[k] += v[k + half];
  return v[0];
}

// Mean and 1/sqrt(biased variance + eps) of one row. Summing deviations from
// the row's first value keeps a large mean from cancelling the variance.
RowStats row_stats(const float* x, int64_t c, double eps) {
  const double first = x[0];
  double s1[kSumLanes] = {}, s2[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= c; i += kSumLanes)
    for (int64_t k = 0; k < kSumLanes; ++k) {
      const double d = x[i + k] - first;
      s1[k] += d;
      s2[k] += d * d;
    }
  for (int64_t k = 0; i + k < c; ++k) {
    const double d = x[i + k] - first;
    s1[k] += d;
    s2[k] += d * d;
  }
  const double n = static_cast<double>(c);
  const double sum = combine_lanes(s1), squares = combine_lanes(s2);
  const double var = std::max(0.0, (squares - sum * sum / n) / n);
  return {static_cast<float>(first + sum / n), static_cast<float>(1.0 / std::sqrt(var + eps))};
}

void check_norm_operands(const KernelArgs& a, size_t ins, size_t outs, const char* op) {
  if (a.in.size() != ins || a.out.size() != outs || !a.in[0].desc)
    throw std::invalid_argument(std::string(op) + a.where() + ": takes " + std::to_string(ins) +
                                " inputs and " + std::to_string(outs) + " outputs");
  if (a.in[0].shape().c < 1)
    throw std::invalid_argument(std::string(op) + a.where() + ": rows of no channels");
}

// How a kernel sees its feature rows: FP32 ones where they lie, or
// bfloat16 ones widened into the thread's row buffer and rounded back from
// it. The FP32 row code runs on either, so the bfloat16 path gives the
// staged path's bits without a tensor-sized FP32 copy.
struct F32NormRows {
  const float* in_row(const void* t, int64_t r, int64_t c, float*) const {
    return static_cast<const float*>(t) + r * c;
  }
  float* out_row(void* t, int64_t r, int64_t c, float*, bool) const {
    return static_cast<float*>(t) + r * c;
  }
  void done(void*, int64_t, int64_t, const float*) const {}
};

struct Bf16NormRows {
  const float* in_row(const void* t, int64_t r, int64_t c, float* buf) const {
    widen_bf16(static_cast<const uint16_t*>(t) + r * c, buf, c);
    return buf;
  }
  // `keep`: the row's current values are added to (an accumulated gradient).
  float* out_row(void* t, int64_t r, int64_t c, float* buf, bool keep) const {
    if (keep) widen_bf16(static_cast<const uint16_t*>(t) + r * c, buf, c);
    return buf;
  }
  void done(void* t, int64_t r, int64_t c, const float* buf) const {
    narrow_to_bf16(buf, static_cast<uint16_t*>(t) + r * c, c);
  }
};

// The thread's row buffers: `count` rows of c floats.
float* norm_row_buffers(int64_t count, int64_t c) {
  thread_local std::vector<float> rows;
  rows.resize(static_cast<size_t>(count * c));
  return rows.data();
}

template <class Rows>
void normalise_rows(const KernelArgs& a, Rows io) {
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, rows = s.n * s.h * s.w;
  const void* x = a.in[0].data;
  const float* gamma = a.in[1].f32();
  const float* beta = a.in[2].f32();
  void* y = a.out[0].data;
  float* saved = has_out(a, 1) ? a.out[1].f32() : nullptr;
  const double eps = a.params().eps;
  parallel_ranges(rows, rows * c * 3, [&](int64_t lo, int64_t hi) {
    float* buf = norm_row_buffers(2, c);
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = io.in_row(x, r, c, buf);
      float* yr = io.out_row(y, r, c, buf + c, false);
      const RowStats st = row_stats(xr, c, eps);
      for (int64_t i = 0; i < c; ++i) yr[i] = (xr[i] - st.mean) * st.inv_std * gamma[i] + beta[i];
      io.done(y, r, c, yr);
      if (saved) {
        saved[2 * r] = st.mean;
        saved[2 * r + 1] = st.inv_std;
      }
    }
  });
}

template <class Rows>
void normalise_rows_backward(const KernelArgs& a, Rows io) {
  const Shape& s = a.in[0].shape();
  const int64_t c = s.c, rows = s.n * s.h * s.w;
  const void* x = a.in[0].data;
  const float* gamma = a.in[1].f32();
  const float* saved = a.in[2].f32();
  const void* dy = a.in[3].data;
  void* dx = has_out(a, 2) ? a.out[2].data : nullptr;
  const bool acc_dx = a.accumulate(2);
  const bool want_params = has_out(a, 0) || has_out(a, 1);
  const int parts = reduction_parts(rows, rows * c * 4);
  // Per part: dgamma's partial sums, then dbeta's. The calling thread's
  // buffer, grown only when a larger layer comes by.
  thread_local std::vector<double> partials;
  if (want_params) partials.assign(static_cast<size_t>(parts * 2 * c), 0.0);
  double* const sums = partials.data();
  for_each_part(rows, parts, [&](int p, int64_t lo, int64_t hi) {
    double* dgamma = want_params ? sums + static_cast<int64_t>(p) * 2 * c : nullptr;
    double* dbeta = dgamma ? dgamma + c : nullptr;
    const double inv_c = 1.0 / static_cast<double>(c);
    float* buf = norm_row_buffers(3, c);
    for (int64_t r = lo; r < hi; ++r) {
      const float* xr = io.in_row(x, r, c, buf);
      const float* dyr = io.in_row(dy, r, c, buf + c);
      const float mean = saved[2 * r], inv_std = saved[2 * r + 1];
      // dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
      double sg[kSumLanes] = {}, sgx[kSumLanes] = {};
      auto add = [&](int64_t i, int64_t k) {
        const float xhat = (xr[i] - mean) * inv_std;
        const float g = dyr[i] * gamma[i];
        sg[k] += g;
        sgx[k] += static_cast<double>(g) * xhat;
      };
      int64_t whole = 0;
      for (; whole + kSumLanes <= c; whole += kSumLanes)
        for (int64_t k = 0; k < kSumLanes; ++k) add(whole + k, k);
      for (int64_t k = 0; whole + k < c; ++k) add(whole + k, k);
      if (dgamma)
        for (int64_t j = 0; j < c; ++j) {
          dgamma[j] += static_cast<double>(dyr[j]) * ((xr[j] - mean) * inv_std);
          dbeta[j] += dyr[j];
        }
      if (!dx) continue;
      const float mg = static_cast<float>(combine_lanes(sg) * inv_c);
      const float mgx = static_cast<float>(combine_lanes(sgx) * inv_c);
      float* dxr = io.out_row(dx, r, c, buf + 2 * c, acc_dx);
      detail::store(acc_dx, dxr, c, [&](int64_t i) {
        const float xhat = (xr[i] - mean) * inv_std;
        return inv_std * (dyr[i] * gamma[i] - mg - xhat * mgx);
      });
      io.done(dx, r, c, dxr);
    }
  });
  if (want_params) detail::write_part_sums(a, sums, parts, c);
}

}  // namespace

// bfloat16 features (compact) with the FP32 scale, shift and statistics run
// natively; any other 16-bit layout is staged.
void layer_norm_fwd(const KernelArgs& a) {
  if (detail::compact_operands(a, 3, 2, {0}, {0})) return normalise_rows(a, Bf16NormRows{});
  if (detail::run_16bit_staged(a, &layer_norm_fwd)) return;
  check_norm_operands(a, 3, 2, "LAYER_NORM_FWD");
  normalise_rows(a, F32NormRows{});
}

void layer_norm_bwd(const KernelArgs& a) {
  if (!has_out(a, 0) && !has_out(a, 1) && !has_out(a, 2)) return;
  if (detail::compact_operands(a, 4, 3, {0, 3}, {2}))
    return normalise_rows_backward(a, Bf16NormRows{});
  if (detail::run_16bit_staged(a, &layer_norm_bwd)) return;
  check_norm_operands(a, 4, 3, "LAYER_NORM_BWD");
  normalise_rows_backward(a, F32NormRows{});
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Comparisons of a ComputeMirror tensor's device result with its CPU twin's
// for the GEMM-like kernels (linear, convolution), whose sums cancel: a bound
// relative to the tensor's largest CPU value, not to each element.
#pragma once

#include <QString>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute_mirror.h"

namespace tr::test {

// Empty when every float is within rel * max|CPU| of the CPU (plus a tiny
// floor for an all-zero tensor); else the first that is not, named `what`.
inline QString far(ComputeMirror& m, size_t t, const char* what, double rel) {
  double scale = 0;
  for (int64_t i = 0; i < m.elements(t); ++i)
    scale = std::max(scale, std::fabs(double(m.f32(t)[i])));
  const double tol = rel * scale + 1e-7;
  for (int64_t i = 0; i < m.elements(t); ++i) {
    const double g = m.gpu_f32(t)[i], c = m.f32(t)[i];
    if (!(std::fabs(g - c) <= tol))
      return QString("%1: float %2 of %3 differs: device %4, CPU %5 (tolerance %6)")
          .arg(what)
          .arg(i)
          .arg(m.elements(t))
          .arg(g, 0, 'g', 9)
          .arg(c, 0, 'g', 9)
          .arg(tol, 0, 'g', 3);
  }
  return {};
}

// Empty when the device's slot equals the CPU's byte for byte.
inline QString differs(const ComputeMirror& m, size_t t, const char* what) {
  if (std::memcmp(m.gpu_bytes(t), m.cpu_bytes(t), m.bytes(t)) == 0) return {};
  return QString("%1: changed by a part that must not write it, or differs").arg(what);
}

}  // namespace tr::test

#define EXPECT_NONE(diff)                   \
  do {                                      \
    const QString e_ = (diff);              \
    QVERIFY2(e_.isEmpty(), qPrintable(e_)); \
  } while (0)

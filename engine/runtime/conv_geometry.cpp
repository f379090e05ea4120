// SPDX-License-Identifier: GPL-3.0-or-later
#include "runtime/conv_geometry.h"

namespace tr {

bool conv_geometry(const NodeParams& p, const Shape& x, const Shape& w, const Shape& y,
                   ConvGeometry& g, std::string& error) {
  g = {x.n,        x.h,        x.w,     x.c,     w.n, w.h, w.w,
       p.stride_h, p.stride_w, p.pad_h, p.pad_w, y.h, y.w, p.groups};
  if (g.groups < 1 || w.c * g.groups != x.c || w.n % g.groups != 0) {
    error = "weights " + w.str() + " do not match input " + x.str() + " (channels) in " +
            std::to_string(g.groups) + " group" + (g.groups == 1 ? "" : "s");
    return false;
  }
  if (y.c != w.n || y.n != x.n) {
    error = "output " + y.str() + " does not match weights " + w.str() + " and input " + x.str();
    return false;
  }
  if (w.h != p.kernel_h || w.w != p.kernel_w) {
    error = "weights " + w.str() + " do not match the kernel size " + std::to_string(p.kernel_h) +
            "x" + std::to_string(p.kernel_w);
    return false;
  }
  if (g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0) {
    error = "bad stride or padding";
    return false;
  }
  const int64_t ho = (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  const int64_t wo = (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  if (ho != g.ho || wo != g.wo || ho < 1 || wo < 1) {
    error = "output " + y.str() + " should be " + std::to_string(ho) + "x" + std::to_string(wo) +
            " spatially for input " + x.str();
    return false;
  }
  return true;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// A convolution's geometry from its operands' shapes and its layer's stride
// and padding, checked the same way for every backend: x [N,H,W,Ci], weights
// [Co,kh,kw,Ci] (OHWI), y [N,Ho,Wo,Co].
#pragma once

#include <cstdint>
#include <string>

#include <renaissance/shape.h>
#include "compile/node_params.h"

namespace tr {

struct ConvGeometry {
  int64_t n, h, w, ci, co, kh, kw, sh, sw, ph, pw, ho, wo;
  int64_t groups;  // each of ci/groups input channels -> co/groups outputs
};

// The geometry, or (returning false) what does not fit in `error`, for the
// caller to report with its own op and layer names.
bool conv_geometry(const NodeParams& p, const Shape& x, const Shape& w, const Shape& y,
                   ConvGeometry& out, std::string& error);

}  // namespace tr

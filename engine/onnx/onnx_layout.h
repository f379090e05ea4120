// SPDX-License-Identifier: GPL-3.0-or-later
// Between our NHWC layout and ONNX's NCHW one, for the writer and the
// reader alike: convolution kernels [O,KH,KW,I] <-> [O,I,KH,KW], and the
// columns of a Linear that reads a flattened image, HWC <-> CHW.
#pragma once

#include <cstdint>
#include <vector>

#include <renaissance/project.h>
#include <renaissance/shape.h>
#include <renaissance/shape_inference.h>

namespace tr {

// [O, KH, KW, I] -> [O, I, KH, KW], and back.
std::vector<float> kernel_to_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                  int64_t i);
std::vector<float> kernel_from_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                    int64_t i);

// The columns of an [out, h*w*c] matrix from HWC order to CHW order, and back.
std::vector<float> columns_to_chw(const std::vector<float>& v, int64_t out, const Shape& s);
std::vector<float> columns_from_chw(const std::vector<float>& v, int64_t out, const Shape& s);

// The orders of a matrix's columns differ only for an image with both
// extent and several channels.
inline bool orders_differ(const Shape& s) {
  return s.h * s.w > 1 && s.c > 1;
}

// Per node of an analysed model: whether its output is a [N, features]
// matrix (after a Flatten, a Linear or a TokenPool) and, if so, the NHWC
// image whose HWC order its features follow. Throws UsageError for a Concat of
// flattened images, whose joint order ONNX's CHW flattening cannot express.
struct FeatureOrders {
  std::vector<bool> flat;
  std::vector<Shape> order;
  // The order of a Linear's input columns: its input's, or the image it reads.
  Shape columns_of(int node, const ModelAnalysis& a) const;
};
FeatureOrders feature_orders(const ModelGraph& g, const ModelAnalysis& a);

}  // namespace tr

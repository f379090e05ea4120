// SPDX-License-Identifier: GPL-3.0-or-later
// The NHWC <-> NCHW re-layouts of weights, and which Linear columns need one.
#include "onnx/onnx_layout.h"

#include <renaissance/error.h>

namespace tr {

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

}  // namespace

std::vector<float> kernel_to_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                  int64_t i) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t c = 0; c < i; ++c)
          out[at(((a * i + c) * kh + y) * kw + x)] = v[at(((a * kh + y) * kw + x) * i + c)];
  return out;
}

std::vector<float> kernel_from_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                    int64_t i) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < o; ++a)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x)
        for (int64_t c = 0; c < i; ++c)
          out[at(((a * kh + y) * kw + x) * i + c)] = v[at(((a * i + c) * kh + y) * kw + x)];
  return out;
}

std::vector<float> columns_to_chw(const std::vector<float>& v, int64_t out, const Shape& s) {
  const int64_t n = s.h * s.w * s.c;
  std::vector<float> r(v.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t y = 0; y < s.h; ++y)
      for (int64_t x = 0; x < s.w; ++x)
        for (int64_t c = 0; c < s.c; ++c)
          r[at(o * n + (c * s.h + y) * s.w + x)] = v[at(o * n + (y * s.w + x) * s.c + c)];
  return r;
}

std::vector<float> columns_from_chw(const std::vector<float>& v, int64_t out, const Shape& s) {
  const int64_t n = s.h * s.w * s.c;
  std::vector<float> r(v.size());
  for (int64_t o = 0; o < out; ++o)
    for (int64_t y = 0; y < s.h; ++y)
      for (int64_t x = 0; x < s.w; ++x)
        for (int64_t c = 0; c < s.c; ++c)
          r[at(o * n + (y * s.w + x) * s.c + c)] = v[at(o * n + (c * s.h + y) * s.w + x)];
  return r;
}

Shape FeatureOrders::columns_of(int node, const ModelAnalysis& a) const {
  const int src = a.source_of(node, 0).node;
  return flat[at(src)] ? order[at(src)] : a.nodes[at(node)].inputs[0];
}

FeatureOrders feature_orders(const ModelGraph& g, const ModelAnalysis& a) {
  FeatureOrders f;
  f.flat.assign(g.nodes.size(), false);
  f.order.assign(g.nodes.size(), Shape{});
  for (int i : a.order) {
    const LayerNode& n = g.nodes[at(i)];
    if (n.type == LayerType::Input) continue;
    const int src = a.source_of(i, 0).node;
    f.flat[at(i)] = f.flat[at(src)];
    f.order[at(i)] = f.order[at(src)];
    if (n.type == LayerType::Flatten && !f.flat[at(i)]) {
      f.flat[at(i)] = true;
      f.order[at(i)] = a.nodes[at(i)].inputs[0];
    } else if (n.type == LayerType::Linear) {
      f.flat[at(i)] = true;
      f.order[at(i)] = Shape{1, 1, 1, n.params.out_channels};
    } else if (n.type == LayerType::Concat && f.flat[at(i)]) {
      for (int port = 0; port < n.params.inputs; ++port) {
        const int from = a.source_of(i, port).node;
        if (f.flat[at(from)] && orders_differ(f.order[at(from)]))
          throw UsageError(n.label() +
                           " joins flattened images: ONNX flattens in another order (CHW), and "
                           "a joint order of several images has no ONNX form; add a Linear "
                           "after each Flatten, or join the images before flattening them");
      }
      f.order[at(i)] = a.nodes[at(i)].output;
    }
  }
  return f;
}

}  // namespace tr

// SPDX-License-Identifier: GPL-3.0-or-later
// The NHWC <-> NCHW re-layouts of weights, and which Linear columns need one.
#include "onnx/onnx_layout.h"

#include <renaissance/error.h>
#include <renaissance/layer_spec.h>

namespace tr {

namespace {

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

// Each pair of layouts is one loop: `ours` and `theirs` give an element's
// index in our layout and in ONNX's, and the copy runs either way.
template <typename Ours, typename Theirs>
std::vector<float> relayout(const std::vector<float>& v, bool to_onnx, int64_t a_n, int64_t b_n,
                            int64_t c_n, int64_t d_n, Ours ours, Theirs theirs) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < a_n; ++a)
    for (int64_t b = 0; b < b_n; ++b)
      for (int64_t c = 0; c < c_n; ++c)
        for (int64_t d = 0; d < d_n; ++d) {
          const size_t o = at(ours(a, b, c, d)), t = at(theirs(a, b, c, d));
          if (to_onnx)
            out[t] = v[o];
          else
            out[o] = v[t];
        }
  return out;
}

std::vector<float> kernels(const std::vector<float>& v, bool to_onnx, int64_t o, int64_t kh,
                           int64_t kw, int64_t i) {
  return relayout(
      v, to_onnx, o, kh, kw, i,
      [=](int64_t a, int64_t y, int64_t x, int64_t c) { return ((a * kh + y) * kw + x) * i + c; },
      [=](int64_t a, int64_t y, int64_t x, int64_t c) { return ((a * i + c) * kh + y) * kw + x; });
}

std::vector<float> columns(const std::vector<float>& v, bool to_onnx, int64_t out, const Shape& s) {
  const int64_t n = s.h * s.w * s.c;
  return relayout(
      v, to_onnx, out, s.h, s.w, s.c,
      [=](int64_t o, int64_t y, int64_t x, int64_t c) { return o * n + (y * s.w + x) * s.c + c; },
      [=](int64_t o, int64_t y, int64_t x, int64_t c) { return o * n + (c * s.h + y) * s.w + x; });
}

}  // namespace

std::vector<float> kernel_to_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                  int64_t i) {
  return kernels(v, true, o, kh, kw, i);
}

std::vector<float> kernel_from_oihw(const std::vector<float>& v, int64_t o, int64_t kh, int64_t kw,
                                    int64_t i) {
  return kernels(v, false, o, kh, kw, i);
}

std::vector<float> columns_to_chw(const std::vector<float>& v, int64_t out, const Shape& s) {
  return columns(v, true, out, s);
}

std::vector<float> columns_from_chw(const std::vector<float>& v, int64_t out, const Shape& s) {
  return columns(v, false, out, s);
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
    } else if (layer_spec(n.type).onnx_input == OnnxInput::Tokens) {
      // Written as tokens [N, T, C]; a TokenPool's one token as a matrix [N, C].
      const bool pool = n.type == LayerType::TokenPool;
      f.flat[at(i)] = pool;
      f.order[at(i)] = pool ? Shape{1, 1, 1, a.nodes[at(i)].output.c} : Shape{};
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

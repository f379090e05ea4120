// SPDX-License-Identifier: GPL-3.0-or-later
#include "compile/layer_rewrites.h"

#include <algorithm>

#include <renaissance/error.h>

#include "compile/layer_lowering.h"

namespace tr {

namespace {

// Whether the backward of a layer of this type reads the layer's own output.
// If it does, that output cannot be overwritten by the next layer's dX.
// ReLU's backward can take its mask from the layer input (x > 0 exactly
// where relu(x) > 0): it does when its output takes the gradient in place,
// and reads the output otherwise, so that the input dies at the forward. The
// fused BN+ReLU recomputes the mask from the BN input.
bool backward_reads_own_output(LayerType t) {
  return layer_lowering(t).backward_reads_output;
}

// Per token or per element, reading only the layer's input (and learned
// parameters): running it again costs a small part of the matrix products
// around it.
bool cheap_to_recompute(LayerType t) {
  return t == LayerType::LayerNorm || layer_lowering(t).activation != Activation::NUM_ACTIVATIONS;
}

// Layers whose backward reads their input (x) only for the weight gradient.
bool is_weighted(LayerType t) {
  return t == LayerType::Conv2d || t == LayerType::Linear || t == LayerType::TokenLinear;
}

// Whether every reader of node n's output is a weighted layer other than the
// first: their backwards read it for the weight gradient only.
bool read_only_for_weight_gradients(const Project& project, const ModelAnalysis& a, int n) {
  const auto& c = a.consumers[static_cast<size_t>(n)];
  return !c.empty() && std::all_of(c.begin(), c.end(), [&](const PortRef& use) {
    return use.node != a.first_layer &&
           is_weighted(project.model.nodes[static_cast<size_t>(use.node)].type);
  });
}

// Whether every reader of node n's output reads it in its backward only as
// its input, which can be a copy computed again there: weighted layers other
// than the first (for the weight gradient) and max pooling (to find its
// maxima; one that would keep where they were reads the copy instead when
// the budget recomputes its input, which is then smaller).
bool read_again_as_input(const Project& project, const ModelAnalysis& a, int n) {
  const auto& c = a.consumers[static_cast<size_t>(n)];
  return !c.empty() && std::all_of(c.begin(), c.end(), [&](const PortRef& use) {
    const LayerType t = project.model.nodes[static_cast<size_t>(use.node)].type;
    return t == LayerType::MaxPool2d || (use.node != a.first_layer && is_weighted(t));
  });
}

// The node holding batch norm n's output: its fused ReLU, or itself.
int output_node(const std::vector<LayerRewrite>& r, int n) {
  const int relu = r[static_cast<size_t>(n)].fused_relu;
  return relu >= 0 ? relu : n;
}

}  // namespace

std::vector<int> recompute_candidates(const Project& project, const ModelAnalysis& a,
                                      const std::vector<LayerRewrite>& r) {
  auto type = [&](int n) { return project.model.nodes[static_cast<size_t>(n)].type; };
  std::vector<int> out;
  for (int n : a.order) {
    if (n == a.input_node || n == a.first_layer) continue;
    const auto& c = a.consumers[static_cast<size_t>(n)];
    if (type(n) == LayerType::BatchNorm2d && read_again_as_input(project, a, output_node(r, n)))
      out.push_back(n);
    else if (type(n) == LayerType::Conv2d && !c.empty() &&
             std::all_of(c.begin(), c.end(), [&](const PortRef& use) {
               return type(use.node) == LayerType::BatchNorm2d;
             }))
      out.push_back(n);
  }
  return out;
}

std::vector<LayerRewrite> plan_layer_rewrites(const Project& project, const ModelAnalysis& a,
                                              const CompileOptions& options) {
  const auto& nodes = project.model.nodes;
  std::vector<LayerRewrite> r(nodes.size());
  auto type = [&](int n) { return nodes[static_cast<size_t>(n)].type; };
  auto only_consumer = [&](int n) {
    const auto& c = a.consumers[static_cast<size_t>(n)];
    return c.size() == 1 ? c.front().node : -1;
  };

  // A batch norm or a residual join's Add and its only consumer, a ReLU:
  // one kernel each way. The Add's fused backward reads the ReLU's output
  // for its mask (below: no in-place gradient over it); batch norm's
  // recomputes it from its input.
  for (int n : a.order) {
    const LayerType t = type(n);
    if (!(t == LayerType::BatchNorm2d && options.fuse_bn_relu) &&
        !(t == LayerType::Add && options.fuse_add_relu))
      continue;
    const int next = only_consumer(n);
    if (next < 0 || type(next) != LayerType::ReLU) continue;
    r[static_cast<size_t>(n)].fused_relu = next;
    r[static_cast<size_t>(next)].fused_into = n;
  }

  // Max pooling keeps where its maxima were when nothing else keeps its
  // input for the backward: a convolution's or batch norm's output (or the
  // ReLU fused into a batch norm), which the pool alone reads; their
  // backwards read their own inputs, not that output. A window's position
  // fits INT8.
  auto listed = [&](int node) {
    return std::find(options.recompute_layers.begin(), options.recompute_layers.end(),
                     nodes[static_cast<size_t>(node)].id) != options.recompute_layers.end();
  };
  if (options.pool_where)
    for (int n : a.order) {
      if (type(n) != LayerType::MaxPool2d) continue;
      const LayerParams& p = nodes[static_cast<size_t>(n)].params;
      if (p.kernel_h * p.kernel_w > 127) continue;
      const int src = a.source_of(n, 0).node;
      if (src == a.input_node || only_consumer(src) != n) continue;
      // A budget that recomputes the input: the pool reads the copy.
      const int bn = r[static_cast<size_t>(src)].fused_into >= 0
                         ? r[static_cast<size_t>(src)].fused_into
                         : src;
      if (type(bn) == LayerType::BatchNorm2d && listed(bn)) continue;
      const LayerType s = type(src);
      if (s == LayerType::Conv2d || s == LayerType::BatchNorm2d ||
          (s == LayerType::ReLU && bn != src && type(bn) == LayerType::BatchNorm2d))
        r[static_cast<size_t>(n)].pool_where = true;
    }

  if (options.recompute)
    for (int n : a.order) {
      const LayerType t = type(n);
      if (n == a.input_node || backward_reads_own_output(t) || !cheap_to_recompute(t)) continue;
      if (!read_only_for_weight_gradients(project, a, n)) continue;
      r[static_cast<size_t>(n)].recompute_out = true;
    }

  // The budget's choices: the output's holder is marked (a fused ReLU's
  // output is its BN's).
  if (!options.recompute_layers.empty()) {
    const std::vector<int> candidates = recompute_candidates(project, a, r);
    for (const std::string& id : options.recompute_layers) {
      const auto at = std::find_if(candidates.begin(), candidates.end(),
                                   [&](int n) { return nodes[static_cast<size_t>(n)].id == id; });
      if (at == candidates.end())
        throw ProjectError({Diagnostic{project.source_path, "", "recompute",
                                       "layer '" + id +
                                           "' cannot be recomputed in the backward: only a "
                                           "batch norm whose output only weighted layers "
                                           "(not the first) and max pooling read, or a "
                                           "convolution (not the first) whose output only "
                                           "batch norms read, can",
                                       0, 0, id}});
      r[static_cast<size_t>(output_node(r, *at))].recompute_out = true;
    }
  }

  // The matrix products: each from an input that is kept, or recomputed from
  // one that is (so no chain reaches further back than a saved tensor), and
  // read only by attention, by the layers recomputed above and by other
  // matrix products.
  if (options.recompute && options.recompute_matmuls) {
    std::vector<bool> product(nodes.size(), false);
    auto kept_or_near = [&](int src) {
      if (src == a.input_node || !r[static_cast<size_t>(src)].recompute_out) return true;
      if (product[static_cast<size_t>(src)]) return false;
      const auto& ins = a.nodes[static_cast<size_t>(src)].inputs;
      for (size_t port = 0; port < ins.size(); ++port) {
        const int from = a.source_of(src, static_cast<int>(port)).node;
        if (from != a.input_node && r[static_cast<size_t>(from)].recompute_out) return false;
      }
      return true;
    };
    for (int n : a.order) {
      const LayerType t = type(n);
      if (n == a.input_node || n == a.first_layer ||
          (t != LayerType::TokenLinear && t != LayerType::Conv2d))
        continue;
      const auto& c = a.consumers[static_cast<size_t>(n)];
      if (c.empty() || !kept_or_near(a.source_of(n, 0).node) ||
          !std::all_of(c.begin(), c.end(), [&](const PortRef& use) {
            const LayerType u = type(use.node);
            return r[static_cast<size_t>(use.node)].recompute_out ||
                   u == LayerType::SelfAttention || (use.node != a.first_layer && is_weighted(u));
          }))
        continue;
      r[static_cast<size_t>(n)].recompute_out = true;
      product[static_cast<size_t>(n)] = true;
    }
  }

  if (options.in_place_dx)
    for (int n : a.order) {
      if (n == a.input_node) continue;
      if (backward_reads_own_output(type(n)) && !r[static_cast<size_t>(n)].pool_where) continue;
      // An Add's fused backward reads its ReLU's output for the mask.
      const int into = r[static_cast<size_t>(n)].fused_into;
      if (into >= 0 && type(into) == LayerType::Add) continue;
      // A recomputed output is gone by the backward: the gradient goes over
      // its copy instead, if the copy is the next layer's input.
      // A BN whose output is a fused ReLU's has no output of its own.
      if (r[static_cast<size_t>(n)].fused_relu >= 0) continue;
      const int next = only_consumer(n);
      if (next < 0 || next == a.first_layer) continue;
      const LayerType t = type(next);
      if (t != LayerType::Conv2d && t != LayerType::Linear) continue;
      r[static_cast<size_t>(n)].grad_in_place = true;
    }
  return r;
}

}  // namespace tr

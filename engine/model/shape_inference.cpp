// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/shape_inference.h>

#include <algorithm>
#include <string>

#include <renaissance/layer_spec.h>
#include "model/layer_shapes.h"

namespace tr {

namespace {

class Analyzer {
 public:
  Analyzer(const Project& p, int64_t batch, int64_t height, int64_t width)
      : p_(p), g_(p.model), batch_(batch), height_(height), width_(width) {}

  ModelAnalysis run() {
    const size_t n = g_.nodes.size();
    a_.nodes.resize(n);
    a_.producer.assign(n * kMaxInputPorts, PortRef{});
    a_.consumers.assign(n, {});
    link_ports();
    find_terminals();
    topological_order();
    infer_shapes();
    check_part_ids();
    check_usage();
    for (const NodeAnalysis& na : a_.nodes) {
      a_.total_params += na.params;
      a_.total_flops += na.flops;
    }
    return std::move(a_);
  }

 private:
  void problem(int node, std::string message, std::string field = {}) {
    Diagnostic d;
    d.file = p_.source_path;
    if (node >= 0) {
      d.node = g_.nodes[static_cast<size_t>(node)].label();
      d.node_id = g_.nodes[static_cast<size_t>(node)].id;
    }
    d.field = std::move(field);
    d.message = std::move(message);
    a_.problems.push_back(std::move(d));
  }

  void link_ports() {
    const int n = static_cast<int>(g_.nodes.size());
    for (const Edge& e : g_.edges) {
      // The loader rejects bad edges; the designer may still hand us one.
      if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.to_port < 0 ||
          e.to_port >= layer_input_ports(g_.nodes[static_cast<size_t>(e.to)]))
        continue;
      a_.producer[static_cast<size_t>(e.to * kMaxInputPorts + e.to_port)] = {e.from, e.from_port};
      a_.consumers[static_cast<size_t>(e.from)].push_back({e.to, e.to_port});
    }
    for (int i = 0; i < n; ++i) {
      for (int port = 0; port < layer_input_ports(g_.nodes[static_cast<size_t>(i)]); ++port)
        if (a_.source_of(i, port).node < 0)
          problem(i, "input port " + std::to_string(port) + " is not connected");
    }
  }

  void find_terminals() {
    for (int i = 0; i < static_cast<int>(g_.nodes.size()); ++i) {
      const LayerType t = g_.nodes[static_cast<size_t>(i)].type;
      if (t == LayerType::Input) {
        if (a_.input_node < 0)
          a_.input_node = i;
        else
          problem(i, "a model takes exactly one Input node; " +
                         g_.nodes[static_cast<size_t>(a_.input_node)].label() +
                         " is already the input");
      }
      if (t == LayerType::SoftmaxCrossEntropy) {
        if (a_.loss_node < 0)
          a_.loss_node = i;
        else
          problem(i, "a model takes exactly one SoftmaxCrossEntropy loss; " +
                         g_.nodes[static_cast<size_t>(a_.loss_node)].label() +
                         " is already the loss");
      }
    }
    if (a_.input_node < 0) problem(-1, "the model has no Input node; add one");
    if (a_.loss_node < 0) problem(-1, "the model has no SoftmaxCrossEntropy loss; add one");
  }

  void topological_order() {
    const size_t n = g_.nodes.size();
    std::vector<int> indegree(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (int port = 0; port < kMaxInputPorts; ++port)
        if (a_.producer[i * kMaxInputPorts + static_cast<size_t>(port)].node >= 0) ++indegree[i];
    std::vector<int> ready;
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
    // Pop the smallest index first so the order follows the file where it can.
    while (!ready.empty()) {
      auto it = std::min_element(ready.begin(), ready.end());
      const int v = *it;
      ready.erase(it);
      a_.order.push_back(v);
      for (const PortRef& c : a_.consumers[static_cast<size_t>(v)])
        if (--indegree[static_cast<size_t>(c.node)] == 0) ready.push_back(c.node);
    }
    if (a_.order.size() == n) return;
    // Nodes left out are on a cycle or downstream of one; only the former are
    // reported, each with the loop it closes.
    std::vector<bool> done(n, false);
    for (int v : a_.order) done[static_cast<size_t>(v)] = true;
    for (size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      const std::vector<int> loop = cycle_from(static_cast<int>(i), done);
      if (loop.empty()) continue;
      std::string path;
      for (int u : loop) path += g_.nodes[static_cast<size_t>(u)].id + " -> ";
      path += g_.nodes[i].id;
      problem(static_cast<int>(i),
              "is part of a cycle (" + path + "); a network must flow one way from Input to loss");
    }
  }

  // The shortest loop from `start` back to itself along edges, starting with
  // `start`; empty when `start` is on no cycle. Only nodes the topological
  // order left out can be on one.
  std::vector<int> cycle_from(int start, const std::vector<bool>& done) const {
    std::vector<int> parent(g_.nodes.size(), -1);
    std::vector<int> queue{start};
    for (size_t head = 0; head < queue.size(); ++head) {
      const int v = queue[head];
      for (const PortRef& c : a_.consumers[static_cast<size_t>(v)]) {
        if (done[static_cast<size_t>(c.node)]) continue;
        if (c.node == start) {
          std::vector<int> loop;
          for (int u = v; u != start; u = parent[static_cast<size_t>(u)]) loop.push_back(u);
          loop.push_back(start);
          std::reverse(loop.begin(), loop.end());
          return loop;
        }
        if (parent[static_cast<size_t>(c.node)] >= 0) continue;
        parent[static_cast<size_t>(c.node)] = v;
        queue.push_back(c.node);
      }
    }
    return {};
  }

  void infer_shapes() {
    for (int v : a_.order) infer(v);
  }

  void infer(int v) {
    const LayerNode& node = g_.nodes[static_cast<size_t>(v)];
    const LayerParams& pr = node.params;
    NodeAnalysis& na = a_.nodes[static_cast<size_t>(v)];
    const int ports = layer_input_ports(node);
    for (int port = 0; port < ports; ++port) {
      const PortRef src = a_.source_of(v, port);
      if (src.node < 0 || !a_.nodes[static_cast<size_t>(src.node)].known) return;
      na.inputs.push_back(a_.nodes[static_cast<size_t>(src.node)].output);
    }
    ShapeQuery q(pr, na.inputs);
    q.batch = batch_;
    q.height = height_;
    q.width = width_;
    q.classes = p_.dataset.classes;
    q.out = ports > 0 ? na.inputs[0] : Shape{};
    if (!layer_spec(node.type).shape(q)) {
      problem(v, std::move(q.problem), std::move(q.field));
      return;
    }
    na.output = q.out;
    na.params = q.param_count;
    na.flops = q.flops;
    na.known = true;
  }

  // A composite layer's parts take ids of their own in the compiled model.
  void check_part_ids() {
    for (size_t v = 0; v < g_.nodes.size(); ++v) {
      const LayerNode& node = g_.nodes[v];
      const PartsRule parts = layer_spec(node.type).parts;
      if (!parts || !a_.nodes[v].known) continue;
      for (const LayerNode& part : parts(node, a_.nodes[v].inputs.at(0)))
        if (g_.find(part.id) >= 0)
          problem(static_cast<int>(v),
                  "its part '" + part.id + "' (" + std::string(layer_type_name(part.type)) +
                      ") takes that id once compiled, and another node has it; rename one of them",
                  "id");
    }
  }

  void check_usage() {
    const int n = static_cast<int>(g_.nodes.size());
    for (int i = 0; i < n; ++i) {
      const LayerNode& node = g_.nodes[static_cast<size_t>(i)];
      if (layer_output_ports(node.type) > 0 && a_.consumers[static_cast<size_t>(i)].empty())
        problem(i, "its output is not used; connect it to a layer or delete the node");
    }
    if (a_.input_node < 0) return;
    const auto& readers = a_.consumers[static_cast<size_t>(a_.input_node)];
    if (readers.size() > 1) {
      problem(a_.input_node,
              "feeds " + std::to_string(readers.size()) +
                  " layers; the input buffer may be read only by the first layer (a Conv2d or "
                  "Linear), so branch after it");
      return;
    }
    if (readers.size() == 1) {
      const LayerNode& first = g_.nodes[static_cast<size_t>(readers[0].node)];
      if (first.type != LayerType::Conv2d && first.type != LayerType::Linear) {
        problem(readers[0].node,
                "reads the Input directly, but the first layer must be a Conv2d or Linear (it "
                "computes only its weight gradient); move this layer after one");
        return;
      }
      a_.first_layer = readers[0].node;
    }
  }

  const Project& p_;
  const ModelGraph& g_;
  int64_t batch_, height_, width_;
  ModelAnalysis a_;
};

}  // namespace

ModelAnalysis analyze_model(const Project& project, int64_t batch, int64_t height, int64_t width) {
  return Analyzer(project, batch, height, width).run();
}

void require_valid(const ModelAnalysis& analysis) {
  if (!analysis.ok()) throw ProjectError(analysis.problems);
}

}  // namespace tr

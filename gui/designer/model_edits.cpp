// SPDX-License-Identifier: GPL-3.0-or-later
#include "model_edits.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <renaissance/layer_spec.h>
#include <renaissance/project_limits.h>

namespace tr::gui {

namespace {

constexpr size_t kMaxIdLength = limits::kMaxNodeIdLength;

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// "conv12" -> "conv": ids of pasted copies get the next free number.
std::string strip_number(const std::string& id) {
  size_t end = id.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(id[end - 1]))) --end;
  std::string base = id.substr(0, end);
  if (!base.empty() && base.back() == '_') base.pop_back();
  return base.empty() ? std::string("node") : base;
}

}  // namespace

bool valid_node_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::string unique_node_id(const ModelGraph& g, std::string_view base) {
  std::set<std::string> taken;
  for (const LayerNode& n : g.nodes) taken.insert(n.id);
  std::string b(base.substr(0, kMaxIdLength - 6));
  for (int i = 1;; ++i) {
    std::string id = b + std::to_string(i);
    if (!taken.count(id)) return id;
  }
}

std::string node_id_base(LayerType t) {
  return std::string(layer_spec(t).id_base);
}

ModelGraph with_fragment(const ModelGraph& g, const ModelGraph& fragment, double dx, double dy,
                         std::vector<int>* added) {
  ModelGraph out = g;
  const int base = static_cast<int>(g.nodes.size());
  for (const LayerNode& src : fragment.nodes) {
    LayerNode n = src;
    if (!valid_node_id(n.id) || out.find(n.id) >= 0)
      n.id = unique_node_id(out, strip_number(valid_node_id(n.id) ? n.id : node_id_base(n.type)));
    n.x += dx;
    n.y += dy;
    n.has_position = true;
    if (added) added->push_back(static_cast<int>(out.nodes.size()));
    out.nodes.push_back(std::move(n));
  }
  const int count = static_cast<int>(fragment.nodes.size());
  for (const Edge& e : fragment.edges) {
    if (e.from < 0 || e.from >= count || e.to < 0 || e.to >= count) continue;
    out.edges.push_back({e.from + base, e.from_port, e.to + base, e.to_port});
  }
  return out;
}

ModelGraph fragment_of(const ModelGraph& g, const std::vector<int>& nodes) {
  ModelGraph out;
  std::vector<int> remap(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!contains(nodes, static_cast<int>(i))) continue;
    remap[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(g.nodes[i]);
  }
  for (const Edge& e : g.edges) {
    const int from = remap[static_cast<size_t>(e.from)], to = remap[static_cast<size_t>(e.to)];
    if (from >= 0 && to >= 0) out.edges.push_back({from, e.from_port, to, e.to_port});
  }
  return out;
}

ModelGraph without(const ModelGraph& g, const std::vector<int>& nodes,
                   const std::vector<int>& edges) {
  ModelGraph out;
  std::vector<int> remap(g.nodes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (contains(nodes, static_cast<int>(i))) continue;
    remap[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(g.nodes[i]);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const Edge& e = g.edges[i];
    if (contains(edges, static_cast<int>(i))) continue;
    const int from = remap[static_cast<size_t>(e.from)], to = remap[static_cast<size_t>(e.to)];
    if (from >= 0 && to >= 0) out.edges.push_back({from, e.from_port, to, e.to_port});
  }
  return out;
}

int edge_into(const ModelGraph& g, int node, int port) {
  for (size_t i = 0; i < g.edges.size(); ++i)
    if (g.edges[i].to == node && g.edges[i].to_port == port) return static_cast<int>(i);
  return -1;
}

ModelGraph with_edge(const ModelGraph& g, const Edge& e, bool* replaced) {
  ModelGraph out = g;
  const int old = edge_into(g, e.to, e.to_port);
  if (replaced) *replaced = old >= 0;
  if (old >= 0)
    out.edges[static_cast<size_t>(old)] = e;
  else
    out.edges.push_back(e);
  return out;
}

}  // namespace tr::gui

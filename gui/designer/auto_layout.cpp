// SPDX-License-Identifier: GPL-3.0-or-later
#include "auto_layout.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace tr::gui {

std::vector<NodePosition> auto_layout(const ModelGraph& g) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<int>> preds(n), succs(n);
  std::vector<int> indegree(n, 0);
  for (const Edge& e : g.edges) {
    if (e.from < 0 || e.to < 0 || static_cast<size_t>(e.from) >= n ||
        static_cast<size_t>(e.to) >= n || e.from == e.to)
      continue;
    preds[static_cast<size_t>(e.to)].push_back(e.from);
    succs[static_cast<size_t>(e.from)].push_back(e.to);
    ++indegree[static_cast<size_t>(e.to)];
  }
  // Longest-path layering in topological order; nodes on a cycle (which the
  // problems panel reports) are placed after everything else.
  std::vector<int> layer(n, 0), order;
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  while (!ready.empty()) {
    auto it = std::min_element(ready.begin(), ready.end());
    const int v = *it;
    ready.erase(it);
    order.push_back(v);
    for (int s : succs[static_cast<size_t>(v)]) {
      layer[static_cast<size_t>(s)] =
          std::max(layer[static_cast<size_t>(s)], layer[static_cast<size_t>(v)] + 1);
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  int deepest = 0;
  for (int v : order) deepest = std::max(deepest, layer[static_cast<size_t>(v)]);
  std::vector<bool> placed(n, false);
  for (int v : order) placed[static_cast<size_t>(v)] = true;
  for (size_t i = 0; i < n; ++i)
    if (!placed[i]) {
      layer[i] = ++deepest;
      order.push_back(static_cast<int>(i));
    }

  // Columns: within a layer, by the mean column of the producers, then by
  // node order; the first node of a layer takes column 0 (the main path).
  std::vector<double> column(n, 0);
  std::map<int, std::vector<int>> by_layer;
  for (int v : order) by_layer[layer[static_cast<size_t>(v)]].push_back(v);
  for (auto& [depth, nodes] : by_layer) {
    std::vector<std::pair<double, int>> keyed;
    for (int v : nodes) {
      const auto& p = preds[static_cast<size_t>(v)];
      double key = 0;
      for (int u : p) key += column[static_cast<size_t>(u)];
      if (!p.empty()) key /= static_cast<double>(p.size());
      keyed.push_back({key, v});
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    double next = 0;
    for (const auto& [key, v] : keyed) {
      const double c = std::max(next, std::floor(key));
      column[static_cast<size_t>(v)] = c;
      next = c + 1;
    }
  }
  std::vector<NodePosition> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i)
    out.push_back(
        {static_cast<int>(i), column[i] * kLayoutColumnPitch, layer[i] * kLayoutRowPitch});
  return out;
}

}  // namespace tr::gui

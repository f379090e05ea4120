// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/cpu_graph.h"

#include <stdexcept>

namespace tr::cpu {

namespace {

// Ancestor sets as one flat array of bitsets (row i: the ancestors of node
// i); capture order is a topological order, so one forward pass suffices.
struct Ancestors {
  size_t words = 0;
  std::vector<uint64_t> bits;
  bool has(size_t node, size_t ancestor) const {
    return bits[node * words + ancestor / 64] >> (ancestor % 64) & 1u;
  }
};

Ancestors ancestors(const std::vector<CapturedNode>& nodes) {
  Ancestors a;
  a.words = (nodes.size() + 63) / 64;
  a.bits.assign(nodes.size() * a.words, 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    uint64_t* row = a.bits.data() + i * a.words;
    for (int p : nodes[i].preds) {
      const auto pi = static_cast<size_t>(p);
      const uint64_t* prow = a.bits.data() + pi * a.words;
      for (size_t w = 0; w < a.words; ++w) row[w] |= prow[w];
      row[pi / 64] |= uint64_t{1} << (pi % 64);
    }
  }
  return a;
}

std::string describe(const CapturedNode& n, size_t index) {
  return "#" + std::to_string(index) + " " +
         (n.launch.tag.label.empty() ? std::string("(unnamed launch)") : n.launch.tag.label) +
         " on " + std::string(stream_kind_name(n.launch.tag.stream));
}

}  // namespace

void CpuGraph::verify_dependencies() const {
  const auto anc = ancestors(nodes);
  for (size_t j = 0; j < nodes.size(); ++j) {
    if (nodes[j].empty) continue;
    for (size_t i = 0; i < j; ++i) {
      if (nodes[i].empty) continue;
      if (!nodes[i].launch.footprint.conflicts_with(nodes[j].launch.footprint)) continue;
      if (anc.has(j, i)) continue;
      throw std::logic_error("captured graph on rank " + std::to_string(rank) + ": " +
                             describe(nodes[j], j) + " touches bytes that " +
                             describe(nodes[i], i) +
                             " also touches, but no event orders them (a missing barrier)");
    }
  }
}

size_t CpuGraph::edge_count() const {
  size_t e = 0;
  for (const CapturedNode& n : nodes) e += n.preds.size();
  return e;
}

}  // namespace tr::cpu

// SPDX-License-Identifier: GPL-3.0-or-later
// Pure edits of a ModelGraph, the operations behind the designer's commands:
// each takes a graph and returns the edited copy, keeping edges (which name
// nodes by index) consistent and the file's rules (unique ids, one edge per
// input port) intact.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <renaissance/project.h>

namespace tr::gui {

// The same rule as the project loader: 1 to 64 letters, digits, '_', '-', '.'.
bool valid_node_id(std::string_view id);
// `base` ("conv") with the first free number: "conv1", "conv2"...
std::string unique_node_id(const ModelGraph& g, std::string_view base);
// The id base for a new node of type `t` ("conv", "relu", "add"...).
std::string node_id_base(LayerType t);

// Appends `fragment` (nodes and its own edges), renaming ids that clash and
// moving positions by (dx, dy). `added` receives the new nodes' indices.
ModelGraph with_fragment(const ModelGraph& g, const ModelGraph& fragment, double dx, double dy,
                         std::vector<int>* added = nullptr);

// The nodes `nodes` and the edges among them, re-indexed from 0.
ModelGraph fragment_of(const ModelGraph& g, const std::vector<int>& nodes);

// Removes the nodes (with every edge touching them) and the edges listed.
ModelGraph without(const ModelGraph& g, const std::vector<int>& nodes,
                   const std::vector<int>& edges);

// Adds an edge; an edge already feeding (e.to, e.to_port) is replaced, since
// an input port takes exactly one. `replaced` tells whether that happened.
ModelGraph with_edge(const ModelGraph& g, const Edge& e, bool* replaced = nullptr);

// The index of the edge feeding (node, port), or -1.
int edge_into(const ModelGraph& g, int node, int port);

}  // namespace tr::gui

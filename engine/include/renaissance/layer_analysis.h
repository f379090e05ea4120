// SPDX-License-Identifier: GPL-3.0-or-later
// Analyze network: per layer of a compiled project, what it outputs and
// costs (parameters, forward FLOPs), what its activations take in each
// shape variant's plan, what the compiler did to it, and what deserves a
// look before training (input rows a stride never reads, a layer that
// holds most of the parameters or activations, channels padded on the
// device). `renaissance-cli plan --layers` prints it; the workbench shows it
// as a table and exports it as CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <renaissance/compiled_plan.h>

namespace tr {

struct LayerRow {
  int node = -1;  // index in the project's model
  std::string id, type;
  std::string settings;  // "5x5, 6 out, stride 1, pad 2": the layer's own parameters
  bool has_output = false;
  Shape output;            // per device, the train variant's batch
  int64_t parameters = 0;  // trainable
  int64_t flops = 0;       // forward, the train variant's batch per device
  // Per variant (CompiledPlan::variants() order): the bytes of the
  // features, gradient slots, masks and saved statistics this layer owns
  // and the variant uses (a packed plan shares some of them over the step).
  std::vector<uint64_t> activation_bytes;
  std::string rewrites;               // "ReLU fused in", "in bn1", "gradient in place"
  std::vector<std::string> warnings;  // each a sentence: what and why
};

struct LayerTable {
  std::vector<std::string> variants;  // names, the activation columns' order
  std::vector<LayerRow> rows;         // in the model's topological order
  int64_t parameters = 0, flops = 0;
  std::vector<uint64_t> activation_bytes;  // per variant, all layers together
};

LayerTable analyze_layers(const CompiledPlan& plan);

// A table for a terminal, a CSV file (one row per layer, the warnings joined
// by "; "), and JSON ({"variants", "layers": [...], "totals"}).
std::string layer_table_text(const LayerTable& table);
std::string layer_table_csv(const LayerTable& table);
nlohmann::json layer_table_json(const LayerTable& table);

}  // namespace tr
